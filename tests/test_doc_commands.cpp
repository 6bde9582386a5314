// Issue 15 item 9: the commands README.md and docs/USAGE.md quote must keep running. Each concrete command line
// (README's `build/stepsim ...` block, USAGE's `$ stepsim ...` examples) runs from the source folder with its output
// files moved to a temporary folder; it must exit 0, or still be working after a time limit (a long search or the
// full validation: it parsed its options and inputs, which is what a stale doc breaks).
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace stepsim {
namespace {

// Command lines of `file` that start with one of `prefixes` inside ``` blocks, prefix removed.
std::vector<std::string> quoted_commands(const std::string& file, const std::vector<std::string>& prefixes) {
  std::istringstream in(test::read_file(test::source_dir() + "/" + file));
  std::vector<std::string> out;
  bool code = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      code = !code;
      continue;
    }
    if (!code) continue;
    for (const std::string& p : prefixes) {
      if (line.rfind(p, 0) == 0) out.push_back(line.substr(p.size()));
    }
  }
  return out;
}

// The command with every output-file flag pointed into `dir` (slashes in the name become dashes, so each file lands
// in `dir` itself).
std::string redirect_outputs(const std::string& args, const std::string& dir) {
  static const std::regex out_flag(R"((--(?:json|trace|out|memory-csv|markdown|csv|report)) (\S+))");
  std::string out;
  auto last = args.cbegin();
  for (std::sregex_iterator it(args.begin(), args.end(), out_flag), end; it != end; ++it) {
    out.append(last, (*it)[0].first);
    std::string name = (*it)[2].str();
    for (char& c : name) {
      if (c == '/') c = '-';
    }
    out += (*it)[1].str() + " " + dir + "doc-out" + name;
    last = (*it)[0].second;
  }
  out.append(last, args.cend());
  return out;
}

TEST(DocCommands, ReadmeAndUsageCommandsStillRun) {
#ifdef STEPSIM_SANITIZED
  GTEST_SKIP() << "documentation check: run in the release suite";
#endif
  std::vector<std::pair<std::string, std::string>> cmds;  // (where, arguments)
  for (const auto& c : quoted_commands("README.md", {"build/stepsim "})) cmds.emplace_back("README.md", c);
  for (const auto& c : quoted_commands("docs/USAGE.md", {"$ stepsim ", "$ build/stepsim "})) cmds.emplace_back("docs/USAGE.md", c);
  ASSERT_GE(cmds.size(), 10u) << "the docs lost their examples, or this test lost track of them";
  const std::string dir = test::temp_dir();
  for (const auto& [where, args] : cmds) {
    const std::string a = redirect_outputs(args, dir);
    const std::string cmd = "cd " + test::source_dir() + " && STEPSIM_CALIBRATION_DB=" + dir +
                            "none.sqlite timeout 20 " + std::string(STEPSIM_BINARY) + " " + a + " > /dev/null 2> " +
                            dir + "doc-cmd.err; echo $?";
    FILE* f = popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[32] = {0};
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    pclose(f);
    const int rc = std::atoi(std::string(buf, n).c_str());
    EXPECT_TRUE(rc == 0 || rc == 124) << where << ": `stepsim " << args << "` exited " << rc << ": "
                                      << test::read_file(dir + "doc-cmd.err");
  }
}

// Issue 15 item 13: the output docs/USAGE.md quotes under a `$ build/stepsim ...` line is what that command prints
// now. Every quoted line that is not an excerpt marker (no "...") must appear, spaces collapsed, in the command's
// output. So a stale number (a step time, the 1.12 GiB overhead, a memory row) fails here, not in a user's hands.
std::string collapse_spaces(const std::string& s) {
  std::string out;
  bool space = true;
  for (char c : s) {
    if (c == ' ' || c == '\t') {
      if (!space) out += ' ';
      space = true;
    } else {
      out += c;
      space = false;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

TEST(DocCommands, UsageQuotedOutputsMatchTheCommands) {
#ifdef STEPSIM_SANITIZED
  GTEST_SKIP() << "documentation check: run in the release suite";
#endif
  std::istringstream in(test::read_file(test::source_dir() + "/docs/USAGE.md"));
  struct Quote {
    std::string args;
    std::vector<std::string> lines;
  };
  std::vector<Quote> quotes;
  bool code = false, active = false;  // active: inside a block, under a `$ build/stepsim` line
  for (std::string line; std::getline(in, line);) {
    const std::string t = collapse_spaces(line);
    if (t.rfind("```", 0) == 0) {
      code = !code;
      active = false;
      continue;
    }
    if (!code) continue;
    if (t.rfind("$ ", 0) == 0) {
      active = t.rfind("$ build/stepsim ", 0) == 0;
      if (active) quotes.push_back({t.substr(16), {}});
    } else if (active && !t.empty() && t.find("...") == std::string::npos) {
      quotes.back().lines.push_back(t);
    }
  }
  int checked = 0;
  const std::string dir = test::temp_dir();
  for (const Quote& q : quotes) {
    if (q.lines.empty()) continue;
    const std::string cmd = "cd " + test::source_dir() + " && STEPSIM_CALIBRATION_DB=" + dir + "none.sqlite " +
                            std::string(STEPSIM_BINARY) + " " + redirect_outputs(q.args, dir) + " 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    std::string output;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) output.append(buf, n);
    pclose(f);
    std::istringstream lines(output);
    std::string collapsed;
    for (std::string l; std::getline(lines, l);) collapsed += collapse_spaces(l) + "\n";
    for (const std::string& want : q.lines) {
      ++checked;
      EXPECT_NE(collapsed.find(want), std::string::npos)
          << "docs/USAGE.md quotes `" << want << "` under `$ build/stepsim " << q.args << "`, which now prints:\n"
          << output;
    }
  }
  EXPECT_GE(checked, 20) << "docs/USAGE.md lost its quoted outputs, or this test lost track of them";
  // The worked example's prose quotes the memory command's overhead column.
  const std::string usage = test::read_file(test::source_dir() + "/docs/USAGE.md");
  const auto mem = test::run_cli("memory " + test::source_dir() + "/examples/gpt3-175b-h800.yaml");
  ASSERT_EQ(mem.code, 0) << mem.output;
  const size_t at = usage.find(" GiB framework overhead (the `overhead` column of `stepsim memory`)");
  ASSERT_NE(at, std::string::npos);
  const std::string quoted = usage.substr(usage.rfind(' ', at - 1) + 1, at - usage.rfind(' ', at - 1) - 1) + " GiB";
  EXPECT_NE(mem.output.find(quoted), std::string::npos) << "USAGE says " << quoted << "; memory prints:\n" << mem.output;
}

}  // namespace
}  // namespace stepsim
