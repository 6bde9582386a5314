// Issue 15 item 9: the commands README.md and docs/USAGE.md quote must keep running. Each concrete command line
// (README's `build/stepsim ...` block, USAGE's `$ stepsim ...` examples) runs from the source folder with its output
// files moved to a temporary folder; it must exit 0, or still be working after a time limit (a long search or the
// full validation: it parsed its options and inputs, which is what a stale doc breaks).
#include <glob.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <map>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/validate/validation.hpp"
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
// in `dir` itself); `written`, when given, maps each output path as the doc wrote it to where it now goes.
std::string redirect_outputs(const std::string& args, const std::string& dir,
                             std::map<std::string, std::string>* written = nullptr) {
  static const std::regex out_flag(R"((--(?:json|trace|out|memory-csv|markdown|csv|report|store|summary)) (\S+))");
  std::string out;
  auto last = args.cbegin();
  for (std::sregex_iterator it(args.begin(), args.end(), out_flag), end; it != end; ++it) {
    out.append(last, (*it)[0].first);
    std::string name = (*it)[2].str();
    if (name.rfind(dir, 0) == 0) {  // already where an earlier quote's output went (read_earlier_outputs)
      out += (*it)[0].str();
      last = (*it)[0].second;
      continue;
    }
    for (char& c : name) {
      if (c == '/') c = '-';
    }
    out += (*it)[1].str() + " " + dir + "doc-out" + name;
    if (written) (*written)[(*it)[2].str()] = dir + "doc-out" + name;
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

// `args` with every path an earlier quote of the doc wrote (a file, or a folder and what is under it) replaced by where
// that quote's output went: a worked example's later steps read what its first steps wrote.
std::string read_earlier_outputs(const std::string& args, const std::map<std::string, std::string>& written) {
  std::istringstream in(args);
  std::string out;
  for (std::string tok; in >> tok;) {
    for (const auto& [as_written, now] : written) {
      if (tok == as_written || (tok.rfind(as_written + "/", 0) == 0)) {
        tok = now + tok.substr(as_written.size());
        break;
      }
    }
    out += (out.empty() ? "" : " ") + tok;
  }
  return out;
}

// A path-like argument (a slash or a file suffix) that exists neither from the source folder nor as given (a pattern:
// matches nothing): the quote runs on a file no quote of its doc makes (a trace the reader records first), so it is
// not checked.
bool needs_missing_input(const std::string& args) {
  static const std::regex out_flag(R"(^--(?:json|trace|out|memory-csv|markdown|csv|report|summary|store)$)");
  std::istringstream in(args);
  std::string prev;
  for (std::string tok; in >> tok; prev = tok) {
    if (tok.rfind("--", 0) == 0 || tok.find('=') != std::string::npos || std::regex_match(prev, out_flag)) continue;
    const bool pathlike = tok.find('/') != std::string::npos ||
                          std::regex_search(tok, std::regex(R"(\.(yaml|json|csv|gz|et|log|sqlite|txt)$)"));
    if (!pathlike) continue;
    if (tok.find('*') != std::string::npos) {
      const std::string pattern = tok[0] == '/' ? tok : test::source_dir() + "/" + tok;
      glob_t g{};
      const bool matched = ::glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0;
      ::globfree(&g);
      if (!matched) return true;
      continue;
    }
    if (!std::filesystem::exists(test::source_dir() + "/" + tok) && !std::filesystem::exists(tok)) return true;
  }
  return false;
}

// Checks the output `file` quotes under `$ build/stepsim ...` / `$ stepsim ...` lines; returns the lines checked.
int check_quoted_outputs(const std::string& file, int* skipped) {
  std::istringstream in(test::read_file(test::source_dir() + "/" + file));
  struct Quote {
    std::string args;
    std::vector<std::string> lines;
  };
  std::vector<Quote> quotes;
  bool code = false, active = false;  // active: inside a block, under a `$ build/stepsim` line
  bool continued = false;             // the command line ended with a backslash: the next line is more of it
  auto without_comment = [](std::string t) {
    const size_t hash = t.find(" # ");
    if (hash != std::string::npos) t.erase(hash);
    while (!t.empty() && t.back() == ' ') t.pop_back();
    return t;
  };
  for (std::string line; std::getline(in, line);) {
    const std::string t = collapse_spaces(line);
    if (t.rfind("```", 0) == 0) {
      code = !code;
      active = continued = false;
      continue;
    }
    if (!code) continue;
    if (continued) {
      std::string more = without_comment(t);
      continued = !more.empty() && more.back() == '\\';
      if (continued) more.pop_back();
      quotes.back().args += " " + collapse_spaces(more);
      continue;
    }
    if (t.rfind("$ ", 0) == 0) {
      const size_t prefix = t.rfind("$ build/stepsim ", 0) == 0 ? 16 : t.rfind("$ stepsim ", 0) == 0 ? 10 : 0;
      active = prefix > 0;
      if (!active) continue;
      std::string args = without_comment(t.substr(prefix));
      continued = !args.empty() && args.back() == '\\';
      if (continued) args.pop_back();
      quotes.push_back({collapse_spaces(args), {}});
    } else if (active && !t.empty() && t.find("...") == std::string::npos && t.find("…") == std::string::npos &&
               t.find("/.cache/") == std::string::npos) {
      // Excerpt markers and lines naming the writer's home cache are not checked; a temporary folder the doc's own
      // quotes write is mapped back to its written name in the output (below), so those lines are.
      quotes.back().lines.push_back(t);
    }
  }
  int checked = 0;
  const std::string dir = test::temp_dir();
  std::map<std::string, std::string> written;  // the doc's output paths so far -> where they went
  for (size_t i = 0; i < quotes.size(); ++i) {
    const Quote& q = quotes[i];
    const std::string args = read_earlier_outputs(q.args, written);
    std::map<std::string, std::string> outputs;
    const std::string redirected = redirect_outputs(args, dir, &outputs);
    // A quote that prints nothing checked still runs when it writes what a later one reads.
    bool read_later = false;
    for (size_t j = i + 1; j < quotes.size() && !read_later; ++j) {
      for (const auto& [path, now] : outputs) read_later = read_later || quotes[j].args.find(path) != std::string::npos;
    }
    written.insert(outputs.begin(), outputs.end());
    if (q.lines.empty() && !read_later) continue;
    // The Chakra export of the GPT-3 demo writes 595 MiB; tests/test_chakra.cpp round-trips it instead. (Other exports
    // quoted are refusals: they run.)
    const bool big_export = q.args.rfind("trace export-chakra examples/gpt3-175b-h800.yaml", 0) == 0;
    if (needs_missing_input(args) || big_export) {
      if (!q.lines.empty()) {
        ++*skipped;
        std::cout << "[ skipped  ] " << file << ": $ stepsim " << q.args << "\n";
      }
      continue;
    }
    const std::string cmd = "cd " + test::source_dir() + " && STEPSIM_CALIBRATION_DB=" + dir + "none.sqlite timeout 120 " +
                            std::string(STEPSIM_BINARY) + " " + redirected + " 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    if (f == nullptr) {
      ADD_FAILURE() << "cannot run " << cmd;
      continue;
    }
    std::string output;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) output.append(buf, n);
    pclose(f);
    // Paths the doc wrote read as the doc wrote them, not as where this test put them.
    for (const auto& [as_written, now] : written) {
      for (size_t at; (at = output.find(now)) != std::string::npos;) output.replace(at, now.size(), as_written);
    }
    std::istringstream lines(output);
    std::string collapsed;
    for (std::string l; std::getline(lines, l);) collapsed += collapse_spaces(l) + "\n";
    for (const std::string& want : q.lines) {
      ++checked;
      EXPECT_NE(collapsed.find(want), std::string::npos)
          << file << " quotes `" << want << "` under `$ stepsim " << q.args << "`, which now prints:\n" << output;
    }
  }
  return checked;
}

TEST(DocCommands, UsageQuotedOutputsMatchTheCommands) {
#ifdef STEPSIM_SANITIZED
  GTEST_SKIP() << "documentation check: run in the release suite";
#endif
  int skipped = 0;
  EXPECT_GE(check_quoted_outputs("docs/USAGE.md", &skipped), 20)
      << "docs/USAGE.md lost its quoted outputs, or this test lost track of them";
  // The worked example's prose quotes the memory command's overhead column.
  const std::string usage = test::read_file(test::source_dir() + "/docs/USAGE.md");
  const auto mem = test::run_cli("memory " + test::source_dir() + "/examples/gpt3-175b-h800.yaml");
  ASSERT_EQ(mem.code, 0) << mem.output;
  const size_t at = usage.find(" GiB framework overhead (the `overhead` column of `stepsim memory`)");
  ASSERT_NE(at, std::string::npos);
  const std::string quoted = usage.substr(usage.rfind(' ', at - 1) + 1, at - usage.rfind(' ', at - 1) - 1) + " GiB";
  EXPECT_NE(mem.output.find(quoted), std::string::npos) << "USAGE says " << quoted << "; memory prints:\n" << mem.output;
}

// The same for every other doc: a worked example's quoted output is what its command prints now (issue 15 item 9:
// WHATIF.md and RELIABILITY.md had drifted from 4.3182 s to a stale 4.3156 s). A quote reading what an earlier quote of
// its doc wrote (/tmp/...) reads it where that quote's output went; a quote whose input nothing makes is skipped and
// counted.
TEST(DocCommands, EveryDocsQuotedOutputsMatchTheCommands) {
#ifdef STEPSIM_SANITIZED
  GTEST_SKIP() << "documentation check: run in the release suite";
#endif
  int checked = 0, skipped = 0;
  std::vector<std::string> docs;
  for (const auto& e : std::filesystem::directory_iterator(test::source_dir() + "/docs")) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".md" && name != "USAGE.md") docs.push_back("docs/" + name);
  }
  std::sort(docs.begin(), docs.end());
  for (const std::string& d : docs) checked += check_quoted_outputs(d, &skipped);
  EXPECT_GE(checked, 40) << "the docs lost their quoted outputs, or this test lost track of them";
  // Skipped: CHAKRA.md's export of the GPT-3 demo (595 MiB, round-tripped by tests/test_chakra.cpp) and the replay
  // that reads it. Every other quote runs, on what the doc's earlier quotes wrote where it reads them.
  EXPECT_LE(skipped, 2) << "most quoted outputs should be checked, not skipped";
}

// The generated validation reports are what `validate --markdown` writes today (the shipped calibration, no local
// store): a model or data change that moves a number fails here until the doc is regenerated with the command its
// first line names.
TEST(DocCommands, GeneratedValidationReportsAreCurrent) {
#ifdef STEPSIM_SANITIZED
  GTEST_SKIP() << "documentation check: run in the release suite";
#endif
  std::map<std::string, std::vector<double>> errors_by_source;
  for (const auto& [csv, doc] : {std::pair{"published_runs.csv", "docs/VALIDATION.md"},
                                 std::pair{"published_runs_2.csv", "docs/VALIDATION-FRAMEWORKS.md"},
                                 std::pair{"published_runs_blackwell.csv", "docs/VALIDATION-BLACKWELL.md"}}) {
    const std::string out = test::temp_dir() + "generated.md";
    const std::string json = test::temp_dir() + "generated.json";
    const auto r = test::run_command("cd " + test::source_dir() + " && STEPSIM_CALIBRATION_DB=/nonexistent/none.sqlite " +
                                     STEPSIM_BINARY + " validate ../shared/data/published-runs/" + csv +
                                     " --markdown " + out + " --json " + json + " > /dev/null 2>&1");
    ASSERT_EQ(r.code, 0) << csv;  // every row of every development file is simulated
    std::string generated = test::read_file(out);
    generated.replace(generated.find(out), out.size(), doc);  // the command line it names
    EXPECT_EQ(generated, test::read_file(test::source_dir() + "/" + doc))
        << doc << " is stale: regenerate it with the command on its first line";
    const nlohmann::json result = nlohmann::json::parse(test::read_file(json));
    for (const auto& row : result["rows"]) {
      errors_by_source[row["source"].get<std::string>()].push_back(row["error"].get<double>());
    }
  }
  // data/efficiency.yaml's new_source_interval is the three files' errors with each source weighted equally, to the
  // three decimals it is written with (what `stepsim validate` over the three files prints as "all runs").
  std::vector<std::pair<double, double>> weighted;
  int runs = 0;
  for (const auto& [source, errors] : errors_by_source) {
    for (double e : errors) weighted.emplace_back(e, 1.0 / static_cast<double>(errors.size()));
    runs += static_cast<int>(errors.size());
  }
  const auto g = catalog::shipped().efficiency.resolve_arch("hopper").new_source_interval;
  ASSERT_TRUE(g.has_value());
  EXPECT_NEAR(g->low, validate::weighted_quantile(weighted, 0.1), 0.0005) << "data/efficiency.yaml new_source_interval";
  EXPECT_NEAR(g->high, validate::weighted_quantile(weighted, 0.9), 0.0005) << "data/efficiency.yaml new_source_interval";
  EXPECT_EQ(g->sources, static_cast<int>(errors_by_source.size()));
  EXPECT_EQ(g->runs, runs);
}

}  // namespace
}  // namespace stepsim
