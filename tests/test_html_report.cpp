// `stepsim simulate JOB --report OUT.html` (docs/REPORTS.md): a self-contained page whose charts, opened in Debian's
// headless Chromium (tests/report/check_report.mjs, puppeteer-core from report-ui/), draw what the summary says.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stepsim/report/html_report.hpp"
#include "test_util.hpp"

using namespace stepsim;

namespace {

struct Report {
  std::string html_path;
  nlohmann::json summary;  // what --json wrote in the same run
  std::string html;
};

Report make_report(const std::string& job, const std::string& name) {
  Report r;
  r.html_path = test::temp_dir() + name + ".html";
  const std::string json_path = test::temp_dir() + name + ".json";
  const auto res = test::run_cli_env("STEPSIM_CALIBRATION_DB=none",
                                     "simulate " + job + " --report " + r.html_path + " --json " + json_path);
  EXPECT_EQ(res.code, 0) << res.output;
  r.summary = nlohmann::json::parse(test::read_file(json_path));
  r.html = test::read_file(r.html_path);
  return r;
}

nlohmann::json embedded_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"stepsim-data\">";
  const size_t a = html.find(open), b = html.find("</script>", a);
  if (a == std::string::npos || b == std::string::npos) return nullptr;
  return nlohmann::json::parse(html.substr(a + open.size(), b - a - open.size()));
}

// What the browser drew: {"errors": [...], "charts": [{"id", "datasets": [{"label", "drawn"}]}]}.
nlohmann::json open_in_chromium(const std::string& html, const std::string& screenshot) {
  const std::string cmd = "node " + test::source_dir() + "/tests/report/check_report.mjs " + html + " " + screenshot + " 2>&1";
  const test::CliResult r = test::run_command(cmd);
  const std::string& out = r.output;
  EXPECT_EQ(r.code, 0) << out;
  const size_t brace = out.find("{\"errors\"");
  if (brace == std::string::npos) {
    ADD_FAILURE() << "no result from the browser check: " << out;
    return nullptr;
  }
  return nlohmann::json::parse(out.substr(brace));
}

int drawn(const nlohmann::json& charts, const std::string& id, const std::string& label) {
  for (const auto& c : charts) {
    if (c["id"] != id) continue;
    for (const auto& d : c["datasets"]) {
      if (d["label"] == label) return d["drawn"].get<int>();
    }
  }
  return -1;
}

// The browser part needs Debian's chromium and report-ui/node_modules (scripts/install-deps, then cmake's npm ci).
bool browser_available(std::string& why) {
  if (!std::filesystem::exists("/usr/bin/chromium") && !std::getenv("CHROMIUM")) why = "/usr/bin/chromium is missing";
  else if (!std::filesystem::exists(test::source_dir() + "/report-ui/node_modules/puppeteer-core")) {
    why = "report-ui/node_modules/puppeteer-core is missing (npm ci in report-ui/)";
  }
  return why.empty();
}

}  // namespace

#define STEPSIM_REQUIRE_BROWSER()                                                                     \
  do {                                                                                              \
    std::string why;                                                                                \
    if (!browser_available(why)) {                                                                  \
      if (std::getenv("STEPSIM_SKIP_BROWSER_TESTS")) GTEST_SKIP() << why;                           \
      FAIL() << why << " (set STEPSIM_SKIP_BROWSER_TESTS=1 to skip on a machine without them)";    \
    }                                                                                               \
  } while (0)

// The numbers behind the charts are the summary's: the page's JSON block holds the --json summary of the same run.
TEST(HtmlReport, PageIsSelfContainedAndCarriesTheSummary) {
  ASSERT_FALSE(report::chart_library_js().empty()) << "built without Chart.js: npm ci in report-ui/, re-run cmake";
  const Report r = make_report(test::source_dir() + "/examples/llama2-7b-8.yaml", "report-llama");
  EXPECT_EQ(r.html.find("<script src"), std::string::npos);  // nothing fetched: opens offline
  EXPECT_EQ(r.html.find("http://"), std::string::npos);
  EXPECT_NE(r.html.find(report::chart_library_version()), std::string::npos);
  const nlohmann::json d = embedded_data(r.html);
  ASSERT_FALSE(d.is_null());
  EXPECT_EQ(d["summary"], r.summary);
  EXPECT_DOUBLE_EQ(d["step_time_s"].get<double>(), r.summary["step_time_s"].get<double>());
}

// A job that does not fit says so first, in a banner above the numbers (as the text summary does), and each stage's
// peak is split into what holds it: the parts add up to the summary's peak.
// The Llama 3 405B example with the distributed optimizer (fp32 gradients whole) is over on any reading.
TEST(HtmlReport, AnOutOfMemoryJobSaysSoFirstAndItsPeakIsSplit) {
  const Report r = make_report(test::source_dir() + "/examples/llama3-405b-8192.yaml --set training.zero_stage=1",
                               "report-oom");
  ASSERT_TRUE(r.summary["memory"]["oom"].get<bool>());
  const size_t banner = r.html.find("Does not fit: peak 94.31 GiB on stage 1, 80.00 GiB per GPU");
  ASSERT_NE(banner, std::string::npos);
  EXPECT_LT(banner, r.html.find("step 10."));
  const nlohmann::json d = embedded_data(r.html);
  ASSERT_EQ(d["memory_parts"].size(), 16u);
  for (const auto& m : d["memory_parts"]) {
    double sum = 0;
    for (const char* k :
         {"weights_gib", "gradients_gib", "optimizer_gib", "copies_gib", "activations_gib", "other_gib"}) {
      sum += m[k].get<double>();
    }
    EXPECT_NEAR(sum, m["peak_gib"].get<double>(), 1e-9);
  }
}

// A tight job (the Llama 3 405B example: its allocations fit, its reserved peak does not) says so in a banner too.
TEST(HtmlReport, ATightJobSaysSoFirst) {
  const Report r = make_report(test::source_dir() + "/examples/llama3-405b-8192.yaml", "report-tight");
  ASSERT_TRUE(r.summary["memory_tight"].get<bool>());
  const size_t banner = r.html.find("Tight in memory: peak 82.62 GiB on stage 1, 80.00 GiB per GPU");
  ASSERT_NE(banner, std::string::npos);
  EXPECT_EQ(r.html.find("Does not fit"), std::string::npos);
}

// The GPT-3 175B demo job (96 H800s, TP 8 x PP 12, 128 micro-batches): every chart drawn, no console error, and the
// marks counted against the summary: one breakdown bar per non-zero part; 12 stages x the first min(128, 2 x 12) = 24
// micro-batches = 288 forward and 288 backward blocks (1F1B, no recompute: one block per micro-batch and pass);
// 12 memory lines and the capacity line; two bars per dimension that communicates; the step and its interval.
TEST(HtmlReport, ChartsDrawWhatTheSummarySaysInChromium) {
  STEPSIM_REQUIRE_BROWSER();
#ifdef STEPSIM_SANITIZED
  GTEST_SKIP() << "the browser check runs in the release suite (the page is the same)";
#endif
  const Report r = make_report(test::source_dir() + "/examples/gpt3-175b-h800.yaml", "report-gpt3");
  const std::string shots = std::filesystem::path(STEPSIM_BINARY).parent_path().string() + "/report-screenshots";
  std::filesystem::create_directories(shots);
  const std::string png = shots + "/simulate-gpt3-175b.png";
  std::filesystem::remove(png);
  const nlohmann::json got = open_in_chromium(r.html_path, png);
  ASSERT_FALSE(got.is_null());
  EXPECT_TRUE(got["errors"].empty()) << got["errors"].dump();
  // Readable text: no tick label covers its neighbour (measured in the page, check_report.mjs).
  EXPECT_TRUE(got["overlaps"].is_array() && got["overlaps"].empty()) << got["overlaps"].dump();
  const nlohmann::json& charts = got["charts"];
  const nlohmann::json& b = r.summary["breakdown_s"];
  int parts = 0;
  for (const char* k : {"compute", "pipeline_bubble", "optimizer", "host_gap", "offload"}) parts += b[k].get<double>() > 0;
  for (const auto& [dim, v] : b["exposed_comm"].items()) parts += v.get<double>() > 0;
  EXPECT_EQ(drawn(charts, "breakdown", "seconds per step"), parts);
  const int pp = 12, window = std::min(r.summary["num_microbatches"].get<int>(), 2 * pp);
  EXPECT_EQ(drawn(charts, "timeline", "forward"), pp * window);
  EXPECT_EQ(drawn(charts, "timeline", "backward"), pp * window);
  EXPECT_GT(drawn(charts, "timeline", "idle (bubble, exposed communication)"), 0);  // the warm-up bubble
  for (int st = 0; st < pp; ++st) {
    const int n = drawn(charts, "memory", "stage " + std::to_string(st) + " (rank " + std::to_string(8 * st) + ")");
    EXPECT_GE(n, 2) << "stage " << st;
    EXPECT_LE(n, 400) << "stage " << st;
  }
  EXPECT_EQ(drawn(charts, "memory", "capacity"), 2);
  EXPECT_EQ(drawn(charts, "memparts", "weights"), pp);  // a bar per stage, split by component
  EXPECT_EQ(drawn(charts, "memparts", "activations and working buffers"), pp);
  int dims = 0;
  for (const auto& [dim, v] : r.summary["comm_message_bytes_per_rank"].items()) dims += v.get<int64_t>() > 0;
  EXPECT_EQ(dims, 2);  // tp and pp
  EXPECT_EQ(drawn(charts, "comm", "message bytes per step (GiB)"), dims);
  EXPECT_EQ(drawn(charts, "comm", "exposed time per step (ms)"), dims);
  EXPECT_EQ(drawn(charts, "interval", "predicted step"), 1);
  EXPECT_EQ(drawn(charts, "interval", "80 % interval"), r.summary["step_time_interval_s"].is_array() ? 1 : -1);
  EXPECT_GT(std::filesystem::file_size(png), 20000u);
}

// A command's report next to its --json, checked in Chromium; returns what was drawn (null when the browser is missing
// and STEPSIM_SKIP_BROWSER_TESTS is set).
static nlohmann::json command_report(const std::string& args, const std::string& name, nlohmann::json& cmd_json) {
  const std::string html = test::temp_dir() + name + ".html", js = test::temp_dir() + name + ".json";
  const auto res = test::run_cli_env("STEPSIM_CALIBRATION_DB=none", args + " --report " + html + " --json " + js);
  EXPECT_EQ(res.code, 0) << res.output;
  cmd_json = nlohmann::json::parse(test::read_file(js));
  EXPECT_EQ(embedded_data(test::read_file(html)).is_null(), false);
#ifdef STEPSIM_SANITIZED
  return nullptr;  // the report was written under the sanitizers; the browser check runs in the release suite
#endif
  const std::string shots = std::filesystem::path(STEPSIM_BINARY).parent_path().string() + "/report-screenshots";
  std::filesystem::create_directories(shots);
  const nlohmann::json got = open_in_chromium(html, shots + "/" + name + ".png");
  if (got.is_null()) return got;
  EXPECT_TRUE(got["errors"].empty()) << got["errors"].dump();
  EXPECT_TRUE(got["overlaps"].is_array() && got["overlaps"].empty()) << name << ": " << got["overlaps"].dump();
  EXPECT_GT(std::filesystem::file_size(shots + "/" + name + ".png"), 10000u);
  return got["charts"];
}


// plan --report: a stacked bar per ranked plan of --json and one for the job as written, one square per (TP, PP) pair
// of `plan --memory-map --csv` for the same job (8 GPUs: TP and PP over 1, 2, 4, 8 = 16 pairs), as many green ones as
// the CSV says fit (the map is at plan #1's settings, the CSV at the job's: the same here, micro-batch 1 both).
TEST(HtmlReport, PlanReportDrawsThePlansAndTheMemoryMap) {
  STEPSIM_REQUIRE_BROWSER();
  const std::string job = test::source_dir() + "/examples/llama2-7b-8.yaml";
  nlohmann::json plan;
  const nlohmann::json charts = command_report("plan " + job + " --top 4", "report-plan", plan);
  if (charts.is_null()) return;
  const std::string csv = test::temp_dir() + "report-map.csv";
  ASSERT_EQ(test::run_cli_env("STEPSIM_CALIBRATION_DB=none", "plan " + job + " --memory-map --csv " + csv).code, 0);
  std::istringstream in(test::read_file(csv));
  int cells = 0, fits = 0;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) ++cells, fits += line.find(",fits") != std::string::npos;
  EXPECT_EQ(cells, 16);
  // A stacked bar per plan and one for the job as written (the baseline), each split into where its step goes.
  EXPECT_EQ(drawn(charts, "plans", "compute"), static_cast<int>(plan["plans"].size()) + 1);
  EXPECT_EQ(drawn(charts, "plans", "DP comm"), static_cast<int>(plan["plans"].size()) + 1);
  EXPECT_EQ(plan["plans"].size(), 4u);
  // The labels carry the optimizer and layout flags, as the text table does.
  const std::string html = test::read_file(test::temp_dir() + "report-plan.html");
  // (the four plans are one tie group)
  EXPECT_NE(html.find("\"label\":\"#1 (tie 1) TP 1 PP 1 DP 8 mbs 1 none dist+ogr+opg\""), std::string::npos);
  EXPECT_NE(html.find("\"label\":\"job TP 1 PP 1 DP 8 mbs 1 none dist\""), std::string::npos);
  EXPECT_EQ(drawn(charts, "map", "fits"), fits);
  EXPECT_EQ(drawn(charts, "map", "fits") + drawn(charts, "map", "over capacity") + drawn(charts, "map", "not a valid split"),
            cells);
  // The table beside the chart: a row per plan and the job's, each with its settings, breakdown and peak memory (what
  // the tooltips hold, readable on paper), and the plans the model's own error cannot order named as equivalent.
  size_t rows = 0;
  for (size_t at = html.find("<tr><td>"); at != std::string::npos; at = html.find("<tr><td>", at + 1)) ++rows;
  EXPECT_EQ(rows, plan["plans"].size() + 1);
  EXPECT_NE(html.find("<tr><td>#1</td><td>#2, #3, #4</td><td>1</td><td>1</td><td>8</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>job as written</td><td>-</td>"), std::string::npos);
  const double peak_gib = plan["plans"][0]["peak_memory_bytes"].get<double>() / (1024.0 * 1024.0 * 1024.0);
  char peak[32];
  std::snprintf(peak, sizeof peak, "<td>%.1f GiB</td></tr>", peak_gib);
  EXPECT_NE(html.find(peak), std::string::npos) << peak;
  EXPECT_NE(html.find("Plans listed as equivalent are within 6.5 % of each other"), std::string::npos);
}

// The out-of-memory report in Chromium: its banner and every stage's split of the peak drawn, no console error, no
// tick label over another.
TEST(HtmlReport, AnOutOfMemoryReportDrawsInChromium) {
  STEPSIM_REQUIRE_BROWSER();
  nlohmann::json summary;
  const nlohmann::json charts =
      command_report("simulate " + test::source_dir() + "/examples/llama3-405b-8192.yaml --set training.zero_stage=1",
                     "report-oom-browser", summary);
  if (charts.is_null()) return;
  ASSERT_TRUE(summary["memory"]["oom"].get<bool>());
  EXPECT_EQ(drawn(charts, "memparts", "weights"), 16);  // a bar per pipeline stage (PP 16)
  EXPECT_EQ(drawn(charts, "memory", "capacity"), 2);
}

// reliability --report: the ETTR curve (81 log-spaced intervals plus the optimum and the interval used, fewer where
// they coincide after rounding), the two markers, one bar per non-zero part of e2e_breakdown_s, six Monte-Carlo figures.
TEST(HtmlReport, ReliabilityReportDrawsEttrAndTheMonteCarloSpread) {
  STEPSIM_REQUIRE_BROWSER();
  nlohmann::json rel;
  const nlohmann::json charts = command_report(
      "reliability " + test::source_dir() + "/examples/llama2-7b-8.yaml --steps 100000 --monte-carlo 100", "report-reliability", rel);
  if (charts.is_null()) return;
  EXPECT_GE(drawn(charts, "ettr", "expected ETTR"), 60);
  EXPECT_LE(drawn(charts, "ettr", "expected ETTR"), 83);
  EXPECT_EQ(drawn(charts, "ettr", "optimal interval"), 1);
  EXPECT_EQ(drawn(charts, "ettr", "interval used"), 1);
  int parts = 0;
  for (const auto& [k, v] : rel["e2e_breakdown_s"].items()) parts += v.get<double>() > 0;
  EXPECT_EQ(drawn(charts, "e2e", "hours"), parts);
  ASSERT_TRUE(rel.contains("monte_carlo"));
  EXPECT_EQ(drawn(charts, "mc", "run time (hours)"), 6);
}

// validate --report: one point per simulated row (per source), the diagonal, two bars per source.
TEST(HtmlReport, ValidateReportDrawsEveryRowAndSource) {
  STEPSIM_REQUIRE_BROWSER();
  nlohmann::json v;
  const nlohmann::json charts = command_report(
      "validate " + std::string(STEPSIM_SHARED_DIR) +
          "/data/published-runs/published_runs.csv --only NAR21-T1-01,NAR21-T1-02,MLM24-H100-16B,BLOOM-176B-gbs16",
      "report-validate", v);
  if (charts.is_null()) return;
  int points = 0;
  for (const auto& [src, row] : v["by_source"].items()) {
    const int n = drawn(charts, "scatter", src);
    EXPECT_EQ(n, row["rows"].get<int>()) << src;
    points += n;
  }
  EXPECT_EQ(points, static_cast<int>(v["rows"].size()));
  EXPECT_EQ(points, 4);
  EXPECT_EQ(drawn(charts, "scatter", "predicted = measured"), 2);
  EXPECT_EQ(drawn(charts, "sources", "MAPE (%)"), static_cast<int>(v["by_source"].size()));
  EXPECT_EQ(drawn(charts, "sources", "mean signed error (%)"), static_cast<int>(v["by_source"].size()));
}

TEST(HtmlReport, UnwritablePathIsExitTwo) {
  const auto r = test::run_cli("simulate " + test::source_dir() + "/examples/llama2-7b-8.yaml --report /nonexistent-dir/x.html");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("/nonexistent-dir/x.html"), std::string::npos) << r.output;
}
