// `stepsim trace import` end to end on the real traces of ../shared/data/real: summary.json and rank<r>.json for
// the 8 DLRM ranks, execution-trace linking on the real Kineto + ET pairs, and exit 2 with one line for bad files.
// Expected numbers were counted from the files with Python's json module (commands in the comments).
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "stepsim/ingest/trace/execution_trace.hpp"
#include "stepsim/ingest/trace/trace_import.hpp"
#include "stepsim/ingest/trace/traced_program_json.hpp"
#include "test_util.hpp"

namespace stepsim::trace {
namespace {

using test::real;  // one definition for every test file (unity build batches)

nlohmann::json load_json(const std::string& path) { return nlohmann::json::parse(test::read_file(path)); }

// Summary numbers: see test_trace_kineto.cpp (kernels, ncclKernel_* count, compute union, ProfilerStep#10 dur).
TEST(TraceImport, DlrmEightRanksCli) {
  std::string args = "trace import";
  for (const char* f : {"worker3_step_12.1694128201557", "worker0_step_12.1694128201545", "worker1_step_12.1694128201556",
                        "worker2_step_12.1694128201554", "worker4_step_12.1694128201547", "worker5_step_12.1694128201549",
                        "worker6_step_12.1694128201553", "worker7_step_12.1694128201553"})
    args.append(" ").append(real("param/dlrm_kineto/")).append(f).append(".pt.trace.json");
  const std::string out = test::temp_dir() + "dlrm";
  const auto r = test::run_cli(args + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto s = load_json(out + "/summary.json");
  ASSERT_EQ(s["ranks"].size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(s["ranks"][i]["rank"], i);  // rank order, whatever the argument order
  const auto& r3 = s["ranks"][3];
  EXPECT_EQ(r3.size(), 5u);  // exactly rank, kernels, nccl_kernels, compute_busy_s, step_time_s
  EXPECT_EQ(r3["kernels"], 315);
  EXPECT_EQ(r3["nccl_kernels"], 8);
  EXPECT_NEAR(r3["compute_busy_s"].get<double>(), 1240e-6, 1e-12);
  EXPECT_NEAR(r3["step_time_s"].get<double>(), 19313e-6, 1e-12);

  const auto p = load_json(out + "/rank3.json");
  EXPECT_EQ(p["format"], "stepsim-trace-program");
  EXPECT_EQ(p["rank"], 3);
  EXPECT_EQ(p["world_size"], 8);
  ASSERT_EQ(p["ops"].size(), 315u);
  int comm = 0;
  int64_t prev = -1;
  for (const auto& op : p["ops"]) {
    EXPECT_GE(op["start_ns"].get<int64_t>(), prev);
    prev = op["start_ns"].get<int64_t>();
    if (op["kind"] == "compute") continue;
    EXPECT_EQ(op["seq"], comm++);
    EXPECT_EQ(op["cuda_stream"], 84);
  }
  EXPECT_EQ(comm, 8);
  EXPECT_EQ(p["ops"][0]["start_ns"], 0);
}

// The matched pair of hta/execution_trace (same pid 563677). By hand from the two files: the 4 kernels' launches
// (cudaLaunchKernel with the kernel's correlation 22, 39, 53, 72) lie inside aten::uniform_ (External id 4, 7) and
// aten::add (External id 22, 36); the ET nodes with those rf_id are ids 8, 13, 36, 58.
TEST(TraceImport, ExecutionTracePairSimpleAdd) {
  const std::string out = test::temp_dir() + "simple_add";
  const auto r = test::run_cli("trace import " + real("hta/execution_trace/benchmark_simple_add_et.json.gz") + " " +
                               real("hta/execution_trace/benchmark_simple_add_trace.json.gz") + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto p = load_json(out + "/rank0.json");
  ASSERT_EQ(p["ops"].size(), 4u);
  const int64_t nodes[4] = {8, 13, 36, 58};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p["ops"][i]["et_node"], nodes[i]) << i;
  EXPECT_EQ(p["names"][p["ops"][3]["cpu_op"].get<int>()], "aten::add");
  const auto s = load_json(out + "/summary.json");
  EXPECT_EQ(s["ranks"][0]["kernels"], 4);
  EXPECT_EQ(s["ranks"][0]["nccl_kernels"], 0);
  EXPECT_TRUE(s["ranks"][0]["step_time_s"].is_null());  // no ProfilerStep in this trace
  EXPECT_NEAR(s["ranks"][0]["compute_busy_s"].get<double>(), 16e-6, 1e-15);  // 5 + 5 + 3 + 3 us, disjoint
}

// DLRM rank 0 with its ET (pid 59811 in both). The Kineto trace has no "Record function id", so ops and nodes are
// aligned by name; /tmp/align.py-style count (ops by External id, nodes by rf_id, skip ahead <= 512 to the next
// equal name) links 174 of the 245 kernels.
TEST(TraceImport, ExecutionTracePairDlrm) {
  const auto ranks = import_traces({real("param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json"),
                                    real("param/dlrm_pytorch_et/dlrm_eg_0.json")});
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].kernels, 245);
  EXPECT_EQ(ranks[0].et_linked, 174);
}

// python3: resnet_2gpu_et has 27 record_param_comms with attrs collective_name (broadcast 6, allreduce 15, ...).
TEST(TraceImport, ChakraExecutionTraceNodes) {
  const ExecutionTrace et = read_execution_trace(real("param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz"));
  EXPECT_EQ(et.schema, "1.1.0-chakra.0.0.4");
  EXPECT_EQ(et.pid, 2254958);
  EXPECT_EQ(et.nodes.size(), 14392u);
  int comms = 0, bc = 0;
  for (const EtNode& n : et.nodes) {
    if (n.name != "record_param_comms") continue;
    ++comms;
    bc += n.collective == "broadcast";
    EXPECT_GE(n.rf_id, 0);
  }
  EXPECT_EQ(comms, 27);
  EXPECT_EQ(bc, 6);
}

void expect_exit2(const std::string& args, const std::string& file, const std::string& words) {
  const auto r = test::run_cli("trace import " + args);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_NE(r.output.find(file), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(words), std::string::npos) << r.output;
}

// Issue 48 item 7: the writers of rank files keep to the limit `simulate --workload` reads (a 503 MB trace made a
// 197 MB rank file that simulate then refused). The rule with a small limit, and the shared limit itself.
TEST(TraceImport, RankFilesAboveTheWorkloadLimitAreNotWritten) {
  EXPECT_EQ(kMaxRankFileBytes, uintmax_t{96} << 20);
  check_rank_file_size("rank0.json", 1000, 1000);  // at the limit: fine
  const std::string e = test::error_of([] { check_rank_file_size("out/rank3.json", uintmax_t{3} << 20, 2 << 20); });
  EXPECT_EQ(e.rfind("out/rank3.json: the rank's program would be 3 MiB, more than the 2 MiB a rank file of `simulate "
                    "--workload` may hold", 0),
            0u)
      << e;
  const std::string path = test::temp_dir() + "rank-too-big.json";
  EXPECT_NE(test::error_of([&] { write_rank_file(path, std::string(kMaxRankFileBytes + 1, ' ')); }).find("97 MiB"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TraceImport, BadInputExitsTwo) {
  const std::string dir = test::temp_dir();
  const std::string gz = test::read_file(real("hta/trace_filter/sampled_rank-0.json.gz"));
  const std::string cut = test::write_temp("cut.json.gz", gz.substr(0, gz.size() / 2));
  expect_exit2(cut + " --out " + dir + "o1", cut, "truncated or corrupt gzip");
  const std::string txt = test::read_file(test::source_dir() + "/tests/data/trace/tiny_kineto.json");
  const std::string half = test::write_temp("half.json", txt.substr(0, txt.size() / 2));
  expect_exit2(half + " --out " + dir + "o2", half, "not valid JSON");
  const std::string r0 = real("hta/trace_filter/sampled_rank-0.json.gz");
  expect_exit2(r0 + " " + r0 + " --out " + dir + "o3", r0, "rank 0 was already given");
  const std::string et = real("param/dlrm_pytorch_et/dlrm_eg_1.json");
  expect_exit2(r0 + " " + et + " --out " + dir + "o4", et, "pid 59812");
  expect_exit2(et + " --out " + dir + "o5", et, "no Kineto");
  expect_exit2(dir + "missing.json --out " + dir + "o6", "missing.json", "cannot read the trace: no such file");
  const std::string other = test::write_temp("other.json", R"({"hello": [1, 2]})");
  expect_exit2(other + " --out " + dir + "o7", other, "neither a Kineto trace");
}


TEST(TraceImport, ATraceWithoutKernelsIsAnError) {
  // Issue 15 item 14: a trace with no GPU kernel event imported as a rank of 0 kernels, exit 0.
  const std::string empty = test::write_temp("no-kernels.json", "{\"traceEvents\": []}\n");
  const auto r = test::run_cli("trace import " + empty + " --out " + test::temp_dir() + "no-kernels-out");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(empty + ": no GPU kernel events"), std::string::npos) << r.output;
  const std::string nested = test::write_temp("nested-events.json", "{\"traceEvents\": [[[[[1]]]]]}\n");
  const auto n = test::run_cli("trace import " + nested + " --out " + test::temp_dir() + "nested-out");
  EXPECT_EQ(n.code, 2) << n.output;
  EXPECT_NE(n.output.find(nested), std::string::npos) << n.output;
}
}  // namespace
// Issue 15 item 15: an input that never ends (/dev/zero) and a small .gz that inflates past the limit are refused at
// kMaxTraceBytes with the limit in the message, after reading at most that much once (no growing copies: /dev/zero
// took 6 GB and 16 s before).
TEST(TraceImport, EndlessAndInflatingInputsStopAtTheLimit) {
  const std::string dir = test::temp_dir();
  const auto zero = test::run_cli("trace import /dev/zero --out " + dir + "/z");
  EXPECT_EQ(zero.code, 2) << zero.output;
  EXPECT_NE(zero.output.find("/dev/zero: the decompressed trace is larger than the limit of 536870912 bytes"),
            std::string::npos) << zero.output;
  const std::string gz = dir + "/bomb.json.gz";  // 600 MB of spaces in 580 KB
  ASSERT_EQ(std::system(("head -c 600000000 /dev/zero | tr '\\0' ' ' | gzip -1 > " + gz).c_str()), 0);
  const auto bomb = test::run_cli("trace import " + gz + " --out " + dir + "/b");
  EXPECT_EQ(bomb.code, 2) << bomb.output;
  EXPECT_NE(bomb.output.find("larger than the limit of 536870912 bytes"), std::string::npos) << bomb.output;
}

}  // namespace stepsim::trace
