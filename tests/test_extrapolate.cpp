// Single-GPU trace extrapolation (`stepsim trace extrapolate`, docs/EXTRAPOLATION.md): the per-op-type regression
// on exact synthetic data, DDP buckets and the step they give under DP, a tensor-parallel split of GEMMs following
// the fitted line, pipeline schedules against the closed form (m + p - 1)(f + b), the real DLRM step extrapolated
// to DP8, and bad input. Synthetic traces are written here as Kineto + execution-trace pairs linked by rf_id.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "stepsim/ingest/extrapolate/ddp_buckets.hpp"
#include "stepsim/ingest/extrapolate/op_regression.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::extrapolate {
namespace {

using nlohmann::json;

constexpr int kPid = 4242;

using test::real;  // one definition for every test file (unity build batches)

// An execution-trace node (schema 1.0.1, flat shapes and types).
json node(int64_t id, const std::string& name, int64_t parent, std::vector<std::vector<int64_t>> in = {},
          std::vector<std::vector<int64_t>> out = {}, int64_t seq = -1) {
  std::vector<std::string> in_t(in.size(), "Tensor(float)"), out_t(out.size(), "Tensor(float)");
  return {{"id", id}, {"name", name}, {"rf_id", id}, {"parent", parent}, {"seq_id", seq}, {"inputs", json::array()},
          {"input_shapes", in}, {"input_types", in_t}, {"output_shapes", out}, {"output_types", out_t}};
}

struct Launch {
  int64_t node;         // the ET node (rf_id) that launches it
  std::string kernel;
  int64_t ns;
};

// Writes NAME.trace.json and NAME.et.json: kernels back to back on one stream from t = 1 ms, each launched by a
// CPU op whose Record function id is its node's rf_id, all inside ProfilerStep#1.
std::pair<std::string, std::string> write_trace(const std::string& name, const std::vector<json>& nodes,
                                                const std::vector<Launch>& launches) {
  json events = json::array();
  int64_t gpu_ns = 1000000, cpu_ns = 1000000, corr = 1;
  for (const Launch& l : launches) {
    std::string op_name;
    for (const json& n : nodes) {
      if (n["id"] == l.node) op_name = n["name"];
    }
    auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
    events.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", op_name}, {"pid", kPid}, {"tid", 1}, {"ts", us(cpu_ns)},
                      {"dur", 3}, {"args", {{"External id", l.node}, {"Record function id", l.node}}}});
    events.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaLaunchKernel"}, {"pid", kPid}, {"tid", 1},
                      {"ts", us(cpu_ns + 1000)}, {"dur", 1}, {"args", {{"correlation", corr}}}});
    events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", l.kernel}, {"pid", 0}, {"tid", 7}, {"ts", us(gpu_ns)},
                      {"dur", us(l.ns)}, {"args", {{"stream", 7}, {"device", 0}, {"correlation", corr}}}});
    cpu_ns += 4000;
    gpu_ns += l.ns;
    ++corr;
  }
  events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#1"}, {"pid", kPid}, {"tid", 1},
                    {"ts", 1000.0}, {"dur", static_cast<double>(cpu_ns) / 1000.0}, {"args", json::object()}});
  const json kineto = {{"schemaVersion", 1}, {"traceEvents", events}};
  const json et = {{"schema", "1.0.1"}, {"pid", kPid}, {"nodes", nodes}};
  return {test::write_temp(name + ".trace.json", kineto.dump()), test::write_temp(name + ".et.json", et.dump())};
}

int64_t collective_ns(const std::string& yaml, workload::CollType c, uint64_t bytes, int ranks) {
  const spec::JobSpec job = test::job_from_yaml(yaml);
  return sim::make_collective_model(stepsim::catalog::shipped(), job)->collective_ns(c, bytes, {ranks, 1, ranks});
}

json simulate(const std::string& yaml, const std::string& dir, const std::string& tag) {
  const std::string job = test::write_temp(tag + ".yaml", yaml);
  const std::string out = test::temp_dir() + tag + "-sim.json";
  const auto r = test::run_cli("simulate " + job + " --workload " + dir + " --json " + out);
  EXPECT_EQ(r.code, 0) << r.output;
  return json::parse(test::read_file(out));
}

std::string extrapolate_cli(const std::pair<std::string, std::string>& tr, const std::string& yaml, const std::string& tag,
                            const std::string& extra = "") {
  const std::string job = test::write_temp(tag + "-job.yaml", yaml);
  const std::string dir = test::temp_dir() + tag;
  std::filesystem::remove_all(dir);
  const auto r = test::run_cli("trace extrapolate " + tr.first + " --et " + tr.second + " --job " + job + " --out " + dir +
                               " " + extra);
  EXPECT_EQ(r.code, 0) << r.output;
  return dir;
}

// (1) t = 2e-3 ns/FLOP * F + 5e-4 ns/B * B + 3000 ns exactly: the fit returns those coefficients and R² = 1; a type
// with two distinct points falls back to proportional scaling.
TEST(Extrapolate, RegressionRecoversExactLine) {
  std::vector<OpSample> s;
  const double pts[][2] = {{1e9, 4e6}, {5e8, 1e7}, {2e9, 2e6}, {3e9, 8e6}, {7e8, 3e5}};
  for (const auto& p : pts) s.push_back({"aten::mm", p[0], p[1], 2e-3 * p[0] + 5e-4 * p[1] + 3000});
  s.push_back({"aten::relu", 0, 1e6, 900});
  s.push_back({"aten::relu", 0, 2e6, 1700});
  const OpRegression r = OpRegression::fit(s);
  const TypeFit* mm = r.find("aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_TRUE(mm->linear);
  EXPECT_EQ(mm->n, 5);
  EXPECT_NEAR(mm->ns_per_flop, 2e-3, 1e-9);
  EXPECT_NEAR(mm->ns_per_byte, 5e-4, 1e-9);
  EXPECT_NEAR(mm->fixed_ns, 3000, 1e-3);
  EXPECT_NEAR(mm->r2, 1.0, 1e-12);
  EXPECT_NEAR(mm->mape, 0.0, 1e-9);
  // Halving FLOPs of the first point follows the line: (1e6 + 2000 + 3000) / (2e6 + 2000 + 3000).
  EXPECT_NEAR(r.scale("aten::mm", 1e9, 4e6, 5e8, 4e6), (1e6 + 5000) / (2e6 + 5000), 1e-9);
  const TypeFit* relu = r.find("aten::relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_FALSE(relu->linear);
  EXPECT_DOUBLE_EQ(r.scale("aten::relu", 0, 1e6, 0, 5e5), 0.5);
}

// MAPE on a hand-made set: times 10, 20, 30, 45 ns at FLOPs 1, 2, 3, 4 (bytes 0). Least squares with the
// intercept free: slope = Sxy/Sxx = 57.5/5 = 11.5, c = 26.25 - 11.5 * 2.5 = -2.5 < 0, so the bound c >= 0 binds and
// t = a F with a = sum(F t)/sum(F^2) = 320/30. Errors |aF - t|/t: 0.06667, 0.06667, 0.06667, 0.05185 -> MAPE 6.296%.
TEST(Extrapolate, RegressionMapeAndNonNegativeIntercept) {
  std::vector<OpSample> s;
  const double t[] = {10, 20, 30, 45};
  for (int i = 0; i < 4; ++i) s.push_back({"aten::addmm", static_cast<double>(i + 1), 0, t[i]});
  const OpRegression r = OpRegression::fit(s);  // find() points into it: keep it alive
  const TypeFit* f = r.find("aten::addmm");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->linear);
  EXPECT_NEAR(f->fixed_ns, 0.0, 1e-9);
  EXPECT_NEAR(f->ns_per_flop, 320.0 / 30.0, 1e-9);
  const double a = 320.0 / 30.0;
  double mape = 0;
  for (int i = 0; i < 4; ++i) mape += std::abs(a * (i + 1) - t[i]) / t[i];
  EXPECT_NEAR(f->mape, mape / 4, 1e-12);
  EXPECT_NEAR(f->mape, 0.06296, 1e-4);
  EXPECT_LT(f->r2, 1.0);
  EXPECT_GT(f->r2, 0.95);
}

// DDP's bucket rule by hand: 0.5 MiB + 1 MiB reach the 1 MiB first bucket; then 4 MiB; with a 2 MiB cap 1 + 1.5 MiB
// close a bucket at 2.5 MiB and the last 1 MiB is a bucket of its own.
TEST(Extrapolate, DdpBucketRule) {
  const int64_t mib = 1 << 20;
  const std::vector<Bucket> b = ddp_buckets({{mib / 2, 1}, {mib, 1}, {4 * mib, 2}}, 25 * mib, false);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].bytes, 3u * mib / 2);
  EXPECT_EQ(b[0].ready_op, 1);
  EXPECT_EQ(b[1].bytes, 4u * mib);
  const std::vector<Bucket> c = ddp_buckets({{2 * mib, 0}, {mib, 1}, {3 * mib / 2, 2}, {mib, 3}}, 2 * mib, false);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].bytes, 2u * mib);
  EXPECT_EQ(c[1].bytes, 5u * mib / 2);
  EXPECT_EQ(c[2].bytes, 1u * mib);
  EXPECT_EQ(c[2].ready_op, 3);
}

// A one-layer step: forward GEMM 100 us; backward dgrad 50 us, after which gradients of 0.5 MiB and 1 MiB are
// accumulated, and wgrad 50 us, after which a 4 MiB one is; optimizer 10 us. DP = 2: buckets 1.5 MiB (ready at
// 150 us) and 4 MiB (ready at 200 us). Overlapped: step = max(200, 150 + T(1.5 MiB)) + T(4 MiB) + 10 us; after the
// backward pass: 200 + T(1.5 MiB) + T(4 MiB) + 10 us, with T the job's all-reduce model over 2 ranks.
std::pair<std::string, std::string> one_layer_trace() {
  const std::vector<json> nodes = {
      node(1, "## forward ##", 0),
      node(10, "aten::linear", 1, {{64, 1024}, {1024, 1024}, {1024}}, {{64, 1024}}, 99),
      node(11, "aten::addmm", 10, {{1024}, {64, 1024}, {1024, 1024}}, {{64, 1024}}, 100),
      node(20, "autograd::engine::evaluate_function: AddmmBackward0", 1),
      node(21, "AddmmBackward0", 20, {}, {}, 100),
      node(22, "aten::mm", 21, {{64, 1024}, {1024, 1024}}, {{64, 1024}}),
      node(23, "torch::autograd::AccumulateGrad", 20, {{512, 256}}),
      node(24, "torch::autograd::AccumulateGrad", 20, {{512, 512}}),
      node(25, "aten::mm", 21, {{1024, 64}, {64, 1024}}, {{1024, 1024}}),
      node(26, "torch::autograd::AccumulateGrad", 20, {{1024, 1024}}),
      node(30, "Optimizer.step#SGD.step", 1),
      node(31, "aten::add_", 30, {{1024, 1024}, {1024, 1024}}, {{1024, 1024}})};
  return write_trace("onelayer", nodes,
                     {{11, "sgemm_fwd", 100000}, {22, "sgemm_dgrad", 50000}, {25, "sgemm_wgrad", 50000},
                      {31, "sgd_update_kernel", 10000}});
}

TEST(Extrapolate, DataParallelBucketsAndExposedAllReduce) {
  const auto tr = one_layer_trace();
  const std::string yaml = test::small_gpt_yaml(1, 1, 2, 2);
  const uint64_t b0 = 3u << 19, b1 = 4u << 20;
  const int64_t t0 = collective_ns(yaml, workload::CollType::AllReduce, b0, 2);
  const int64_t t1 = collective_ns(yaml, workload::CollType::AllReduce, b1, 2);
  ASSERT_GT(t0, 0);
  const int64_t us = 1000;
  {
    const std::string dir = extrapolate_cli(tr, yaml, "dp-overlap");
    const json x = json::parse(test::read_file(dir + "/extrapolation.json"));
    ASSERT_EQ(x["generated"]["buckets"].size(), 2u);
    EXPECT_EQ(x["generated"]["buckets"][0]["bytes"], b0);
    EXPECT_EQ(x["generated"]["buckets"][1]["bytes"], b1);
    EXPECT_EQ(x["source"]["gradient_source"], "execution_trace");
    EXPECT_FALSE(std::filesystem::exists(dir + "/rank1.json"));  // the data-parallel peer reuses rank 0's program
    const json s = simulate(yaml, dir, "dp-overlap");
    const int64_t want = std::max<int64_t>(200 * us, 150 * us + t0) + t1 + 10 * us;
    EXPECT_NEAR(s["step_time_s"].get<double>(), want * 1e-9, 1e-9);
  }
  {
    const std::string dir = extrapolate_cli(tr, yaml, "dp-after", "--dp-overlap after");
    const json s = simulate(yaml, dir, "dp-after");
    EXPECT_NEAR(s["step_time_s"].get<double>(), (200 * us + t0 + t1 + 10 * us) * 1e-9, 1e-9);
  }
}

// Four linear layers (two Megatron column/row pairs) whose GEMM times lie exactly on t = 1e-3 F + 5e-4 B + 3000 ns:
// at TP = 2 each GEMM's FLOPs and bytes halve and its time is the line's value there; each pair adds an all-reduce
// of the row layer's output (64 x 256 floats) after it.
TEST(Extrapolate, TensorParallelHalvesGemmsAlongTheLine) {
  const int64_t dims[][2] = {{256, 512}, {512, 256}, {256, 1024}, {1024, 256}};  // (in, out) features
  std::vector<json> nodes = {node(1, "## forward ##", 0)};
  std::vector<Launch> launches;
  std::vector<double> flops, bytes;
  for (int l = 0; l < 4; ++l) {
    const int64_t k = dims[l][0], n = dims[l][1], id = 10 + 2 * l;
    nodes.push_back(node(id, "aten::linear", 1, {{64, k}, {n, k}, {n}}, {{64, n}}));
    nodes.push_back(node(id + 1, "aten::addmm", id, {{n}, {64, k}, {k, n}}, {{64, n}}));
    flops.push_back(2.0 * 64 * k * n);
    bytes.push_back(4.0 * (n + 64 * k + k * n + 64 * n));
    launches.push_back({id + 1, "sgemm_" + std::to_string(l), std::llround(1e-3 * flops[l] + 5e-4 * bytes[l] + 3000)});
  }
  const auto tr = write_trace("tp4", nodes, launches);
  std::string yaml = test::small_gpt_yaml(2, 1, 1, 1);
  const std::string dir = extrapolate_cli(tr, yaml, "tp2");
  const json x = json::parse(test::read_file(dir + "/extrapolation.json"));
  const json& fit = x["fit"][0];
  EXPECT_EQ(fit["type"], "aten::addmm");
  EXPECT_EQ(fit["model"], "linear");
  EXPECT_NEAR(fit["r2"].get<double>(), 1.0, 1e-6);
  EXPECT_NEAR(fit["ns_per_flop"].get<double>(), 1e-3, 1e-5);
  EXPECT_EQ(x["generated"]["tp_pairs"], 2);
  const json r0 = json::parse(test::read_file(dir + "/rank0.json"));
  const json r1 = json::parse(test::read_file(dir + "/rank1.json"));
  EXPECT_EQ(r0["ops"], r1["ops"]);
  int gemm = 0, allreduce = 0;
  for (const json& op : r0["ops"]) {
    if (op["kind"] == "compute") {
      const double want = 1e-3 * flops[gemm] / 2 + 5e-4 * bytes[gemm] / 2 + 3000;
      // The trace's times are whole nanoseconds, so the fit is exact to within that rounding (0.1%).
      EXPECT_NEAR(op["duration_ns"].get<double>(), want, 1e-3 * want) << "layer " << gemm;
      ++gemm;
    } else {
      EXPECT_EQ(op["coll"], "all_reduce");
      EXPECT_EQ(op["bytes"], 64 * 256 * 4);
      EXPECT_EQ(op["group_ranks"], json({0, 1}));
      ++allreduce;
    }
  }
  EXPECT_EQ(gemm, 4);
  EXPECT_EQ(allreduce, 2);
  const json s = simulate(yaml, dir, "tp2");
  EXPECT_GT(s["step_time_s"].get<double>(), 0.0);
}

// Two equal layers: forward 10 us, backward 20 us each. On 2 stages with 4 micro-batches and a link that costs
// nothing, GPipe and 1F1B both take (m + p - 1)(f + b) = 5 x 30 us = 150 us (worked through by hand in
// docs/EXTRAPOLATION.md).
TEST(Extrapolate, PipelineScheduleClosedForm) {
  std::vector<json> nodes = {node(1, "## forward ##", 0)};
  std::vector<Launch> launches;
  for (int l = 0; l < 2; ++l) {
    const int64_t id = 10 + 2 * l;
    nodes.push_back(node(id, "aten::linear", 1, {{64, 256}, {256, 256}, {256}}, {{64, 256}}));
    nodes.push_back(node(id + 1, "aten::addmm", id, {{256}, {64, 256}, {256, 256}}, {{64, 256}}, 100 + l));
    launches.push_back({id + 1, "sgemm_fwd" + std::to_string(l), 10000});
  }
  nodes.push_back(node(30, "autograd::engine::evaluate_function: AddmmBackward0", 1));
  for (int l = 1; l >= 0; --l) {
    const int64_t id = 40 + 2 * l;
    nodes.push_back(node(id, "AddmmBackward0", 30, {}, {}, 100 + l));
    nodes.push_back(node(id + 1, "aten::mm", id, {{64, 256}, {256, 256}}, {{64, 256}}));
    launches.push_back({id + 1, "sgemm_bwd" + std::to_string(l), 20000});
  }
  const auto tr = write_trace("pp2", nodes, launches);
  std::string yaml = test::small_gpt_yaml(1, 2, 1, 4);
  const std::string link = "intra_node: {bandwidth_GBps: 450, latency_us: 1}";
  yaml.replace(yaml.find(link), link.size(), "intra_node: {bandwidth_GBps: 1000000000, latency_us: 0}");
  for (const std::string sched : {"gpipe", "1f1b"}) {
    const std::string dir = extrapolate_cli(tr, yaml, "pp-" + sched, "--schedule " + sched);
    const json x = json::parse(test::read_file(dir + "/extrapolation.json"));
    ASSERT_EQ(x["generated"]["stages"].size(), 2u);
    EXPECT_EQ(x["generated"]["stages"][0]["layers"], json({0, 0}));
    EXPECT_EQ(x["generated"]["stages"][0]["forward_ns"], 10000);
    EXPECT_EQ(x["generated"]["stages"][1]["backward_ns"], 20000);
    EXPECT_EQ(x["generated"]["stages"][0]["boundary_bytes"], 64 * 256 * 4);
    EXPECT_EQ(x["generated"]["micro_batches"], 4);
    const json s = simulate(yaml, dir, "pp-" + sched);
    // Each send/recv on the critical path costs the model's 1 ns minimum (8 of them in GPipe, 5 in 1F1B).
    EXPECT_NEAR(s["step_time_s"].get<double>(), 150e-6, 10e-9) << sched;
    EXPECT_GE(s["step_time_s"].get<double>(), 150e-6) << sched;
  }
  // The user's assignment and its checks.
  const std::string job = test::write_temp("pp-job.yaml", yaml);
  EXPECT_EQ(test::run_cli("trace extrapolate " + tr.first + " --et " + tr.second + " --job " + job + " --out " +
                          test::temp_dir() + "pp-user --stages 0-0,1-1").code, 0);
  const auto bad = test::run_cli("trace extrapolate " + tr.first + " --et " + tr.second + " --job " + job + " --out " +
                                 test::temp_dir() + "pp-bad --stages 0-1,2-2");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("--stages"), std::string::npos) << bad.output;
}

// (6) Bad input: exit 2 with one line naming the file or flag.
TEST(Extrapolate, BadInputExitsTwo) {
  const auto tr = one_layer_trace();
  const std::string job = test::write_temp("bad-job.yaml", test::small_gpt_yaml(1, 1, 2, 2));
  const std::string base = "trace extrapolate " + tr.first + " --et " + tr.second + " --job " + job + " --out " +
                           test::temp_dir() + "bad";
  auto expect2 = [](const test::CliResult& r, const std::string& needle) {
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
  };
  expect2(test::run_cli(base + " --dp-overlap sometimes"), "--dp-overlap");
  expect2(test::run_cli(base + " --bucket-mb 0"), "--bucket-mb");
  expect2(test::run_cli(base + " --schedule zigzag"), "--schedule");
  expect2(test::run_cli("trace extrapolate /nonexistent/trace.json --job " + job + " --out " + test::temp_dir() + "bad"),
          "/nonexistent/trace.json");
  // An execution trace of another process.
  json et = json::parse(test::read_file(tr.second));
  et["pid"] = 1;
  const std::string other = test::write_temp("other.et.json", et.dump());
  expect2(test::run_cli("trace extrapolate " + tr.first + " --et " + other + " --job " + job + " --out " +
                        test::temp_dir() + "bad"),
          "pid");
  // Tensor parallelism without the execution trace has no shapes to split.
  const std::string tp_job = test::write_temp("bad-tp.yaml", test::small_gpt_yaml(2, 1, 1, 1));
  expect2(test::run_cli("trace extrapolate " + tr.first + " --job " + tp_job + " --out " + test::temp_dir() + "bad"),
          "--et");
}

// (5) Rank 0 of the real DLRM DP8 run (8 x V100): its communication dropped, its step extrapolated to DP = 8 with
// DDP buckets from the execution trace's AccumulateGrad nodes, and simulated on an 8-V100 job. The gradients add up
// to the 2,485,252 B the trace's own three all-reduces carried (1,576,964 + 448 + 907,840); the first bucket is
// exactly the trace's first all-reduce. The step lands within 15% of the measured ProfilerStep#10 (14.455 ms):
// 12.686 ms (-12.2%) when this test was written, against 13.136 ms for the replay of all 8 imported ranks on this job; the rest
// is the other ranks' straggling, which rank 0's NCCL kernels waited for and one rank's trace cannot show.
TEST(Extrapolate, RealDlrmRankZeroToEightGpus) {
  const std::string yaml =
      "model: {name: dlrm, num_layers: 8, hidden_size: 512, num_attention_heads: 8, ffn_hidden_size: 2048,"
      " vocab_size: 32000, seq_length: 128}\n"
      "parallelism: {tensor: 1, pipeline: 1, data: 8}\n"
      "training: {micro_batch_size: 16, global_batch_size: 128}\n"
      "cluster: {gpu: V100-SXM2-32GB, num_gpus: 8, gpus_per_node: 8, intra_node: {bandwidth_GBps: 130, latency_us: 5},"
      " inter_node: {bandwidth_Gbps: 100, latency_us: 10}}\n";
  const std::string job = test::write_temp("dlrm-x.yaml", yaml);
  const std::string dir = test::temp_dir() + "dlrm-x";
  const auto r = test::run_cli("trace extrapolate " + real("param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json") +
                               " --et " + real("param/dlrm_pytorch_et/dlrm_eg_0.json") + " --job " + job + " --out " + dir +
                               " --trace-batch 16");
  ASSERT_EQ(r.code, 0) << r.output;
  const json x = json::parse(test::read_file(dir + "/extrapolation.json"));
  EXPECT_EQ(x["source"]["gradient_bytes"], 1576964 + 448 + 907840);
  EXPECT_EQ(x["source"]["dropped_comm_kernels"], 8);
  EXPECT_EQ(x["source"]["compute_kernels"], 245 - 8);
  EXPECT_EQ(x["generated"]["buckets"][0]["bytes"], 1576964);
  EXPECT_EQ(x["generated"]["buckets"].size(), 2u);
  bool linear_fit = false;
  for (const json& f : x["fit"]) linear_fit = linear_fit || (f["type"] == "aten::mm" && f["model"] == "linear");
  EXPECT_TRUE(linear_fit);
  const json s = simulate(yaml, dir, "dlrm-x");
  EXPECT_EQ(s["workload"]["reused_ranks"], 7);
  EXPECT_NEAR(s["step_time_s"].get<double>(), 0.014455, 0.15 * 0.014455);
  // No allocations in a traced program: said, not printed as a 0 B prediction (issue 15 item 1).
  ASSERT_TRUE(s.contains("notes")) << s.dump();
  EXPECT_NE(s["notes"][0].get<std::string>().find("no allocations"), std::string::npos) << s["notes"].dump();

  // Host time is work, replayed per micro-batch (issue 15 item 1): at global batch 256 (2 micro-batches per rank) the
  // step is twice the one micro-batch step (it was 2.068 ms against 12.686 ms before: the host gaps were dropped).
  std::string yaml256 = yaml;
  yaml256.replace(yaml256.find("global_batch_size: 128"), 22, "global_batch_size: 256");
  const std::string job256 = test::write_temp("dlrm-x256.yaml", yaml256);
  const std::string dir256 = test::temp_dir() + "dlrm-x256";
  const auto r256 = test::run_cli("trace extrapolate " + real("param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json") +
                                  " --et " + real("param/dlrm_pytorch_et/dlrm_eg_0.json") + " --job " + job256 + " --out " +
                                  dir256 + " --trace-batch 16");
  ASSERT_EQ(r256.code, 0) << r256.output;
  EXPECT_TRUE(json::parse(test::read_file(dir256 + "/extrapolation.json"))["generated"]["host_gaps"].get<bool>());
  const json s256 = simulate(yaml256, dir256, "dlrm-x256");
  EXPECT_NEAR(s256["step_time_s"].get<double>(), 2 * s["step_time_s"].get<double>(), 0.01 * s["step_time_s"].get<double>());
}

}  // namespace
}  // namespace stepsim::extrapolate
