// Outputs users and scripts rely on: the summary JSON contract, the Chrome trace (Perfetto) structure
// with send->recv flows, the memory-over-time CSV, and the examples running end to end.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace stepsim {
namespace {

using nlohmann::json;

std::string tmp(const std::string& name) { return stepsim::test::temp_dir() + name; }

const std::string kJob = test::source_dir() + "/examples/gpt3-175b-h800.yaml";
// Small version of the first example: 12 stages of 1 layer, 16 micro-batches.
const std::string kSmall = kJob + " --set model.num_layers=12 --set training.global_batch_size=16";

TEST(Outputs, SummaryJsonHasEveryContractField) {
  const auto r = test::run_cli("simulate " + kSmall + " --quiet --json " + tmp("sum.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(test::read_file(tmp("sum.json")));
  for (const char* k : {"step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_GT(j[k].get<double>(), 0) << k;
  }
  for (const char* k : {"compute", "pipeline_bubble", "optimizer"}) EXPECT_TRUE(j["breakdown_s"].contains(k)) << k;
  // host_gap: the GPU waiting for the host to issue (host issue model; the first ops of the step at least)
  // overlap_slowdown_s: what compute and the optimizer lost beside communication (the SM-share model by default)
  double total = j["breakdown_s"]["compute"].get<double>() + j["breakdown_s"]["pipeline_bubble"].get<double>() +
                 j["breakdown_s"]["optimizer"].get<double>() + j["breakdown_s"]["host_gap"].get<double>() +
                 j["breakdown_s"]["overlap_slowdown_s"].get<double>();
  EXPECT_GT(j["breakdown_s"]["overlap_slowdown_s"].get<double>(), 0.0);
  EXPECT_EQ(j["simulation"]["overlap_model"], "sm_share");
  for (const char* k : {"tp", "cp", "ep", "pp", "dp"}) {
    EXPECT_TRUE(j["breakdown_s"]["exposed_comm"].contains(k)) << k;
    EXPECT_TRUE(j["comm_message_bytes_per_rank"].contains(k)) << k;
    EXPECT_TRUE(j["comm_volume_bytes_per_rank"].contains(k)) << k;
    total += j["breakdown_s"]["exposed_comm"][k].get<double>();
  }
  EXPECT_NEAR(total, j["step_time_s"].get<double>(), 1e-9);  // the breakdown covers the step exactly
  EXPECT_TRUE(j["memory"].contains("peak_bytes_max"));
  EXPECT_FALSE(j["memory"]["oom"].get<bool>());
  ASSERT_EQ(j["memory"]["per_stage"].size(), 12u);
  for (const auto& st : j["memory"]["per_stage"]) {
    EXPECT_EQ(st["peak_bytes"].get<int64_t>(), st["static_bytes"].get<int64_t>() + st["activation_bytes"].get<int64_t>());
  }
  EXPECT_EQ(j["simulation"]["ranks"], 96);
  EXPECT_GT(j["simulation"]["events"].get<int64_t>(), 0);
  // tokens/s = global batch x sequence / step time.
  EXPECT_NEAR(j["tokens_per_s"].get<double>(), 16.0 * 2048 / j["step_time_s"].get<double>(), 1e-6 * j["tokens_per_s"].get<double>());
}

TEST(Outputs, JsonToADashIsStandardOutput) {
  // `--json -` is standard output, as the tools users pipe into read it; it was a file named "-".
  const std::string dir = test::temp_dir() + "dash/";
  std::filesystem::create_directories(dir);
  const auto r =
      test::run_command("cd " + dir + " && " + STEPSIM_BINARY + " simulate " + kSmall + " --quiet --json - 2>&1");
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(r.output);
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  EXPECT_FALSE(std::filesystem::exists(dir + "-"));
}

TEST(Outputs, ChromeTraceOpensAsPerfettoExpects) {
  const auto r = test::run_cli("simulate " + kSmall + " --quiet --trace " + tmp("t.trace.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(test::read_file(tmp("t.trace.json")));
  ASSERT_TRUE(j["traceEvents"].is_array());
  // The job's step, as the summary gives it (stepsim compare reads it).
  const auto sj = test::run_cli("simulate " + kSmall + " --quiet --json " + tmp("t.summary.json"));
  ASSERT_EQ(sj.code, 0) << sj.output;
  EXPECT_NEAR(j["otherData"]["step_time_s"].get<double>(),
              json::parse(test::read_file(tmp("t.summary.json")))["step_time_s"].get<double>(), 1e-9);
  std::set<int> pids;
  std::map<int, std::set<std::string>> thread_names;
  std::map<int64_t, int> flow_starts, flow_ends;
  int complete = 0, with_flops = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "thread_name") thread_names[e["pid"]].insert(e["args"]["name"].get<std::string>());
    if (ph == "X") {
      ++complete;
      pids.insert(e["pid"].get<int>());
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e["args"].contains("microbatch"));
      EXPECT_TRUE(e["args"].contains("layer"));
      if (e["args"].contains("flops")) ++with_flops;
      if (e["cat"] == "tp") {
        EXPECT_EQ(e["args"]["group"], "tp");
        EXPECT_GT(e["args"]["bytes"].get<int64_t>(), 0);
      }
    }
    if (ph == "s") ++flow_starts[e["id"].get<int64_t>()];
    if (ph == "f") ++flow_ends[e["id"].get<int64_t>()];
  }
  // Default trace ranks: one per pipeline stage (tp = dp = 0): ranks 0, 8, ..., 88.
  std::set<int> expected;
  for (int s = 0; s < 12; ++s) expected.insert(8 * s);
  EXPECT_EQ(pids, expected);
  for (int pid : expected) {
    EXPECT_EQ(thread_names[pid], (std::set<std::string>{"compute", "tp", "cp", "ep", "pp", "dp", "memcpy", "pp_prev"})) << pid;
  }
  EXPECT_GT(complete, 1000);
  EXPECT_GT(with_flops, 0);
  // Every send has its receive: 11 stage boundaries x 16 micro-batches x 2 directions.
  EXPECT_EQ(flow_starts.size(), 11u * 16 * 2);
  EXPECT_EQ(flow_starts, flow_ends);
}

TEST(Outputs, TraceRanksSelectsProcesses) {
  const auto r = test::run_cli("simulate " + kSmall + " --quiet --trace " + tmp("t2.trace.json") + " --trace-ranks 0-2,95");
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(test::read_file(tmp("t2.trace.json")));
  std::set<int> pids;
  for (const auto& e : j["traceEvents"]) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{0, 1, 2, 95}));
  const auto bad = test::run_cli("simulate " + kSmall + " --trace " + tmp("t3.json") + " --trace-ranks 0-96");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("--trace-ranks"), std::string::npos) << bad.output;
  const auto bad_rank = test::run_cli("simulate " + kSmall + " --rank 96");
  EXPECT_EQ(bad_rank.code, 2);
}

// Issue 48 item 4: `--trace-ranks 0-4095` of the 8,192-GPU example kept 35.6 M spans (2.9 GiB) and wrote a 9 GiB
// trace; refused before the simulation, with how many of its ranks fit (4,194,304 ops / 9,877 ops a rank = 424).
TEST(Outputs, TraceRanksOfMoreOpsThanATraceHoldsAreRefusedAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = test::run_cli("simulate " + test::source_dir() + "/examples/llama3-405b-8192.yaml --trace " +
                               tmp("big.json") + " --trace-ranks 0-4095");
  EXPECT_LT(std::chrono::steady_clock::now() - start, test::kRefusalTime);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--trace-ranks: the 4096 ranks recorded issue 40456192 ops in a step, above the 4194304 a "
                          "trace or memory series may hold (about 424 ranks of this job): record fewer"),
            std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(tmp("big.json")));
}

TEST(Outputs, MemoryCsvFollowsTheStep) {
  const auto r = test::run_cli("simulate " + kSmall + " --quiet --json " + tmp("m.json") + " --memory-csv " + tmp("m.csv") +
                               " --trace-ranks 0");
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(test::read_file(tmp("m.json")));
  std::istringstream csv(test::read_file(tmp("m.csv")));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "rank,time_s,allocated_bytes");
  int64_t first = -1, peak = 0, last = 0;
  double prev_t = -1;
  int rows = 0;
  while (std::getline(csv, line)) {
    int rank = 0;
    double t = 0;
    long long bytes = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%d,%lf,%lld", &rank, &t, &bytes), 3) << line;
    EXPECT_EQ(rank, 0);
    EXPECT_GE(t, prev_t);
    prev_t = t;
    if (first < 0) first = bytes;
    peak = std::max<int64_t>(peak, bytes);
    last = bytes;
    ++rows;
  }
  EXPECT_GT(rows, 100);
  EXPECT_EQ(first, j["memory"]["per_stage"][0]["static_bytes"].get<int64_t>());  // starts at static memory
  EXPECT_EQ(peak, j["memory"]["per_stage"][0]["peak_bytes"].get<int64_t>());
  EXPECT_EQ(last, first);  // every activation stored in the step is released by its backward
}

TEST(Outputs, TextSummaryHasUnits) {
  const auto r = test::run_cli("simulate " + kSmall);
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* s : {"step time", "GiB", "MFU", "%", "tokens/s", "pipeline bubble", " ms "}) {
    EXPECT_NE(r.output.find(s), std::string::npos) << s;
  }
}

TEST(Outputs, EveryExampleRuns) {
  for (const char* ex : {"gpt3-175b-h800.yaml", "llama2-70b-1024.yaml", "mixtral-8x7b-ep8.yaml", "deepseek-v3-2048.yaml"}) {
    const auto r = test::run_cli("simulate " + test::source_dir() + "/examples/" + ex + " --quiet --json " + tmp("ex.json"));
    ASSERT_EQ(r.code, 0) << ex << ": " << r.output;
    const json j = json::parse(test::read_file(tmp("ex.json")));
    EXPECT_GT(j["mfu"].get<double>(), 0.05) << ex;
    EXPECT_LT(j["mfu"].get<double>(), 0.8) << ex;
    EXPECT_FALSE(j["memory"]["oom"].get<bool>()) << ex;
  }
  // The 8,192-GPU Llama-3 example is checked at reduced batch (same ranks, 16 micro-batches: the fewest its
  // interleaved schedule runs).
  const auto r = test::run_cli("simulate " + test::source_dir() + "/examples/llama3-405b-8192.yaml --quiet "
                               "--set training.global_batch_size=1024 --json " + tmp("l3.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(json::parse(test::read_file(tmp("l3.json")))["simulation"]["ranks"], 8192);
}

TEST(Outputs, BadOutputPathsAreRefusedBeforeAnyWork) {
  // Issue 15 item 18: an unwritable --json or --trace failed only after the whole simulation; a directory given as
  // the NCCL log read as a 9.2e18-byte file. Now each is refused while the options are parsed, naming the path.
  const std::string job = test::source_dir() + "/examples/llama3-405b-8192.yaml";  // the largest example: slow to run
  const std::string dir = test::temp_dir();
  auto r = test::run_cli("simulate " + job + " --json /nonexistent-folder/x.json");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--json: /nonexistent-folder/x.json: its folder /nonexistent-folder does not exist"),
            std::string::npos) << r.output;
  r = test::run_cli("simulate " + job + " --trace " + dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("is a directory; give a file to write"), std::string::npos) << r.output;
  r = test::run_cli("plan " + job + " --json " + dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--json: " + dir + " is a directory"), std::string::npos) << r.output;
  r = test::run_cli("profile nccl --log " + dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot read the NCCL log (--log): it is a directory, not a file"), std::string::npos)
      << r.output;
  // /dev/full opens but fails every write: refused before the simulation, saying what it is.
  r = test::run_cli("simulate " + job + " --json /dev/full");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("/dev/full is the always-full device"), std::string::npos) << r.output;
  // A device is a valid target.
  r = test::run_cli("memory " + job + " --json /dev/null");
  EXPECT_EQ(r.code, 0) << r.output;
}

}  // namespace
}  // namespace stepsim
