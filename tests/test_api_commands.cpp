// The commands that issue 42 moved behind api/ (trace, compare, slowdown, calibrate compute, comm), called as a
// library caller would: typed results whose numbers follow from the inputs by hand, the same refusals as the CLI.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "stepsim/api/comm.hpp"
#include "stepsim/api/compare.hpp"
#include "stepsim/api/simulate.hpp"
#include "stepsim/api/slowdown.hpp"
#include "stepsim/api/trace.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

// nccl-tests' bus bandwidth of an all-reduce is algbw x 2(n-1)/n (its PERFORMANCE.md), and algbw is bytes / time.
TEST(ApiCommands, CommRowsAreTypedAndTheJsonCarriesTheSameNumbers) {
  api::CommOptions o;
  o.collective = "all_reduce";
  o.gpus = 8;
  o.sizes = "1M-4M";
  const api::CommOutput out = api::comm(o);
  ASSERT_EQ(out.rows.size(), 3u);  // 1M, 2M, 4M
  const nlohmann::json j = api::comm_json(out);
  ASSERT_EQ(j.size(), out.rows.size());
  for (size_t i = 0; i < out.rows.size(); ++i) {
    const api::CommRow& r = out.rows[i];
    EXPECT_EQ(r.size_bytes, uint64_t{1} << (20 + i));
    EXPECT_NEAR(r.algbw_GBps, static_cast<double>(r.size_bytes) / (r.time_us * 1e3), 1e-9 * r.algbw_GBps);
    EXPECT_NEAR(r.busbw_GBps, r.algbw_GBps * 2 * 7 / 8, 1e-9 * r.busbw_GBps);
    EXPECT_EQ(j[i]["size_bytes"].get<uint64_t>(), r.size_bytes);
    EXPECT_EQ(j[i]["time_us"].get<double>(), r.time_us);
    EXPECT_EQ(j[i]["algorithm"].get<std::string>(), r.algorithm);
    EXPECT_EQ(j[i]["protocol"].get<std::string>(), r.protocol);
    EXPECT_EQ(j[i]["channels"].get<int>(), r.channels);
  }
  const std::string text = api::comm_text(o, out);
  EXPECT_NE(text.find("all_reduce, 8 GPUs (1 node x 8)"), std::string::npos) << text;
  // The links the rows were computed for (issue 45 item 1): the default H100 node's NVLink and one 400G NIC per GPU.
  EXPECT_NE(text.find("# links: intra-node 450 GB/s per GPU; inter-node 400 Gb/s per GPU (one NIC per GPU) over ib "
                      "(not used: one node)"),
            std::string::npos)
      << text;
}

// A step compared with itself: no step error and no error in any op type.
TEST(ApiCommands, CompareOfASimulatedStepWithItselfHasNoError) {
  api::SimulateOptions s;
  s.job.job_path = test::source_dir() + "/examples/llama2-7b-8.yaml";
  s.trace_path = test::temp_dir() + "api-compare.trace.json";
  api::write_outputs(s, api::simulate(s));
  api::CompareOptions o;
  o.simulated = o.measured = s.trace_path;
  const api::CompareOutput c = api::compare_traces(o);
  EXPECT_GT(c.result.sim_step_ns, 0);
  EXPECT_EQ(c.result.step_error_ns(), 0);
  ASSERT_FALSE(c.result.types.empty());
  for (const auto& t : c.result.types) EXPECT_EQ(t.error_ns(), 0) << t.type;
  EXPECT_EQ(c.json["step"]["error_s"].get<double>(), 0.0) << c.json["step"].dump();
  EXPECT_EQ(c.json["kernels"]["matched_ops"], c.json["kernels"]["simulated_ops"]);
  o.pick.rank = 4096;
  EXPECT_NE(test::error_of([&] { api::compare_traces(o); }).find("4096"), std::string::npos);
}

// The eight DLRM ranks of shared/data/real/param/dlrm_kineto, one Kineto trace each: eight programs, the Kineto reader.
TEST(ApiCommands, TraceImportOfRealKinetoTracesGivesOneProgramPerRank) {
  api::TraceImportOptions o;
  for (const auto& e : std::filesystem::directory_iterator(test::real("param/dlrm_kineto"))) {
    o.traces.push_back(e.path().string());
  }
  ASSERT_EQ(o.traces.size(), 8u);
  o.out = test::temp_dir() + "api-dlrm-import";
  const api::TraceImportOutput out = api::trace_import(o);
  EXPECT_FALSE(out.chakra.has_value());
  ASSERT_EQ(out.kineto.size(), 8u);
  for (int r = 0; r < 8; ++r) EXPECT_TRUE(std::filesystem::exists(o.out + "/rank" + std::to_string(r) + ".json")) << r;
  EXPECT_NE(api::trace_import_text(o, out).find("8 rank(s)"), std::string::npos);
  o.comm_groups = "groups.json";  // Kineto traces have no communicator-group file
  EXPECT_NE(test::error_of([&] { api::trace_import(o); }).find("--comm-groups"), std::string::npos);
}

// Issue 48 item 6: --name is a prefix, not a path; refused before the job is simulated, and nothing is written.
TEST(ApiCommands, ChakraExportNameCannotLeaveTheOutputFolder) {
  api::ExportChakraOptions o;
  o.job.job_path = test::source_dir() + "/examples/llama2-7b-8.yaml";
  o.files.dir = test::temp_dir() + "api-chakra-out";
  for (const char* name : {"../../x", "a/b", ".hidden", ""}) {
    o.files.name = name;
    EXPECT_NE(test::error_of([&] { api::export_chakra(o); }).find("--name '" + std::string(name) + "': must be a file-name prefix"),
              std::string::npos)
        << name;
  }
  EXPECT_FALSE(std::filesystem::exists(o.files.dir));
  EXPECT_NO_THROW(chakra::check_export_name("llama2-7b.v1_run"));
}

// Issue 48 item 6: the 8,192-GPU example wrote 13 GiB in 103 s unasked. The size is estimated from one rank of each
// pipeline stage before anything is written; above --max-gib (4 by default) nothing is written. The estimate is
// checked against what a real export writes: the 8-GPU example's files, within 1 %.
TEST(ApiCommands, ChakraExportAboveItsBoundIsRefusedBeforeAnythingIsWritten) {
  const std::string dir = test::temp_dir() + "chakra-big";
  std::filesystem::remove_all(dir);
  const auto start = std::chrono::steady_clock::now();
  auto r = test::run_cli("trace export-chakra " + test::source_dir() + "/examples/llama3-405b-8192.yaml --out " + dir);
  EXPECT_LT(std::chrono::steady_clock::now() - start, test::kRefusalTime);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("the export would write about 13.8 GiB in 8192 files to " + dir + ", above --max-gib 4.0; "
                          "raise --max-gib to write it"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir));
  r = test::run_cli("trace export-chakra " + test::source_dir() + "/examples/llama2-7b-8.yaml --out " + dir +
                    " --max-gib 0.001");
  EXPECT_EQ(r.code, 2) << r.output;
  const size_t at = r.output.find("the export would write about ");
  ASSERT_NE(at, std::string::npos) << r.output;
  r = test::run_cli("trace export-chakra " + test::source_dir() + "/examples/llama2-7b-8.yaml --out " + dir +
                    " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  double written = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".et") written += static_cast<double>(e.file_size());
  }
  api::ExportChakraOptions o;
  o.job.job_path = test::source_dir() + "/examples/llama2-7b-8.yaml";
  o.files.dir = dir + "-2";
  o.files.max_gib = written / double(1 << 30) * 0.99;
  EXPECT_NE(test::error_of([&] { api::export_chakra(o); }).find("above --max-gib"), std::string::npos);
  o.files.max_gib = written / double(1 << 30) * 1.01;
  EXPECT_EQ(test::error_of([&] { api::export_chakra(o); }), "<no error>");
  for (double bad : {0.0, -1.0}) {
    o.files.max_gib = bad;
    EXPECT_NE(test::error_of([&] { api::export_chakra(o); }).find("--max-gib: must be above 0"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir + "-2");
}

TEST(ApiCommands, SlowdownTrainingRefusesFoldsOutsideTheRows) {
  api::SlowdownTrainOptions o;
  o.data = test::source_dir() + "/tests/data/slowdown/synthetic.csv";
  o.out = test::temp_dir() + "api-slowdown.json";
  o.folds = 1;
  EXPECT_NE(test::error_of([&] { api::slowdown_train(o); }).find("--folds 1: must be at least 2"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(o.out));
}

// Issue 48 item 5: a negative rank, step or count is refused by the CLI, not read as "the default" (or, for an
// unsigned count, as 2^64 - 1).
TEST(ApiCommands, NegativeRanksStepsAndCountsAreRefused) {
  const std::string t = test::source_dir() + "/examples/llama2-7b-8.yaml";  // never read: the flags fail first
  for (const char* flag : {"--rank -1", "--step -3", "--top -1"}) {
    const auto r = test::run_cli(std::string("compare ") + t + " " + t + " " + flag);
    EXPECT_EQ(r.code, 2) << flag << ": " << r.output;
    EXPECT_NE(r.output.find("must be at least 0"), std::string::npos) << flag << ": " << r.output;
  }
  const auto r = test::run_cli("validate " + t + " --jobs -1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--jobs: must be at least 0, got -1"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace stepsim
