// Issue 48 item 3: ill-formed UTF-8 in a user's string (here a model name) reaches every file stepsim writes as
// U+FFFD, so the JSON, the HTML report and the trace are valid and stepsim reads its own trace back; before, the JSON
// writers threw (exit 1, "internal error") and the trace was written with the raw bytes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "stepsim/io/utf8.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(Utf8Output, IllFormedBytesBecomeTheReplacementCharacter) {
  EXPECT_EQ(io::valid_utf8("llama-3 8B"), "llama-3 8B");
  EXPECT_EQ(io::valid_utf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");  // é € 😀
  EXPECT_EQ(io::valid_utf8("a\xFF" "b"), "a" + kReplacement + "b");           // never a UTF-8 byte
  EXPECT_EQ(io::valid_utf8("\x80"), kReplacement);                            // lone continuation byte
  EXPECT_EQ(io::valid_utf8("\xC0\x80"), kReplacement + kReplacement);         // overlong NUL
  EXPECT_EQ(io::valid_utf8("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);  // a surrogate, U+D800
  EXPECT_EQ(io::valid_utf8("\xF4\x90\x80\x80"), kReplacement + kReplacement + kReplacement + kReplacement);  // > U+10FFFF
  EXPECT_EQ(io::valid_utf8("x\xE2\x82"), "x" + kReplacement + kReplacement);  // cut short at the end
  const nlohmann::json j = {{"name", std::string("m\xFF")}};
  EXPECT_EQ(io::json_text(j), "{\"name\":\"m" + kReplacement + "\"}");
}

TEST(Utf8Output, AModelNameOfBadBytesGivesValidFilesAndExitZero) {
  std::string yaml = test::small_gpt_yaml(1, 1, 2, 4);
  yaml.replace(yaml.find("name: tiny"), 10, "name: \"tiny\xFF\xFE\"");
  const std::string job = test::write_temp("bad-bytes.yaml", yaml);
  const std::string dir = test::temp_dir();
  const auto r = test::run_cli("simulate " + job + " --json " + dir + "bad.json --report " + dir + "bad.html --trace " +
                               dir + "bad-trace.json");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* f : {"bad.json", "bad-trace.json"}) {
    const std::string text = test::read_file(dir + f);
    nlohmann::json parsed;
    EXPECT_NO_THROW(parsed = nlohmann::json::parse(text)) << f;  // the parser rejects ill-formed UTF-8
  }
  // The trace names the model (otherData.model); the summary JSON does not.
  EXPECT_NE(test::read_file(dir + "bad-trace.json").find("tiny" + kReplacement + kReplacement), std::string::npos);
  EXPECT_NE(test::read_file(dir + "bad.html").find("tiny" + kReplacement), std::string::npos);
  const auto c = test::run_cli("compare " + dir + "bad-trace.json " + dir + "bad-trace.json");
  EXPECT_EQ(c.code, 0) << c.output;
  const auto p = test::run_cli("plan " + job + " --json " + dir + "bad-plan.json --report " + dir + "bad-plan.html");
  EXPECT_EQ(p.code, 0) << p.output;
  // Every byte of the reports is well-formed UTF-8 (the <title> and <h1> carried the raw bytes before).
  for (const char* f : {"bad.html", "bad-plan.html"}) {
    const std::string text = test::read_file(dir + f);
    EXPECT_EQ(io::valid_utf8(text), text) << f;
  }
  nlohmann::json plan;
  EXPECT_NO_THROW(plan = nlohmann::json::parse(test::read_file(dir + "bad-plan.json")));
}

// A runs CSV whose id carries bad bytes: validate's JSON, HTML and Markdown are all well-formed UTF-8.
TEST(Utf8Output, ARunIdOfBadBytesGivesValidValidationFiles) {
  std::istringstream in(test::read_file(std::string(STEPSIM_SHARED_DIR) + "/data/published-runs/published_runs.csv"));
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  row.replace(0, row.find(','), "NAR\xFF\xFE-01");
  const std::string csv = test::write_temp("bad-id.csv", header + "\n" + row + "\n");
  const std::string dir = test::temp_dir();
  const auto r = test::run_cli("validate " + csv + " --json " + dir + "bad-v.json --report " + dir + "bad-v.html " +
                               "--markdown " + dir + "bad-v.md");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* f : {"bad-v.json", "bad-v.html", "bad-v.md"}) {
    const std::string text = test::read_file(dir + f);
    EXPECT_EQ(io::valid_utf8(text), text) << f;
    EXPECT_NE(text.find("NAR" + kReplacement + kReplacement + "-01"), std::string::npos) << f;
  }
}

}  // namespace
}  // namespace stepsim
