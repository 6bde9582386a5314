// Compute slowdown under overlap in the engine (issue 7 item 1): hand-built programs on 2 data-parallel ranks,
// a collective model where a collective of B bytes takes B ns, and overlap models with known slowdowns, so every
// end time is a closed form. Also the coefficient model's file and sums, and the breakdown/trace/JSON outputs.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "stepsim/cost/overlap/overlap_coefficients.hpp"
#include "stepsim/cost/overlap/overlap_sm_share.hpp"
#include "stepsim/report/breakdown.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/stream_replay.hpp"
#include "stepsim/plan/estimate/zero_stream.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::sim {
namespace {

using workload::CollType;
using workload::ComputeCategory;
using workload::Op;
using workload::OpKind;
using workload::Stream;

// A collective of B bytes takes B ns; send/recv too.
class BytesAreNanoseconds final : public cost::CollectiveModel {
 public:
  int64_t collective_ns(CollType, uint64_t bytes, const cost::GroupGeometry&) const override {
    return static_cast<int64_t>(bytes);
  }
  int64_t p2p_ns(uint64_t bytes, bool) const override { return static_cast<int64_t>(bytes); }
};

// Slowdown = sum over the communication ops in flight of (bytes of the op) / 1e5, so a 50,000-byte collective
// slows compute by 0.5 and a 100,000-byte one by 1.0.
class BytesSlowdown final : public cost::OverlapModel {
 public:
  double compute_slowdown(const cost::OverlapCompute&, std::span<const cost::OverlapComm> comms) const override {
    double s = 0;
    for (const auto& c : comms) s += static_cast<double>(c.bytes) / 1e5;
    return s;
  }
};

Op compute(int64_t ns) {
  Op op;
  op.kind = OpKind::Compute;
  op.stream = Stream::Compute;
  op.category = ComputeCategory::Gemm;
  op.duration_ns = ns;
  return op;
}

Op all_reduce(uint64_t bytes) {
  Op op;
  op.kind = OpKind::Collective;
  op.stream = Stream::Dp;
  op.group = workload::GroupKind::Dp;
  op.coll = CollType::AllReduce;
  op.bytes = bytes;
  return op;
}

// A 2-rank data-parallel workload whose one program is replaced by `fill`.
template <class Fill>
workload::Workload two_ranks(Fill fill) {
  workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(test::small_gpt_yaml(1, 1, 2, 2)));
  for (auto& p : w.programs) {
    workload::Program fresh;
    fresh.stage = p.stage;
    workload::ProgramBuilder b(fresh);
    fill(b);
    p = std::move(fresh);
  }
  return w;
}

// End of rank 0's first compute-stream op, and its recorded overlap.
std::pair<int64_t, int64_t> first_compute(const SimResult& r) {
  for (const OpRecord& rec : r.recorded.at(0).ops) {
    if (rec.op == 0) return {rec.end_ns, rec.overlap_ns};
  }
  ADD_FAILURE() << "compute op not recorded";
  return {0, 0};
}

SimResult run(const workload::Workload& w, const cost::OverlapModel* overlap) {
  BytesAreNanoseconds comm;
  EngineOptions opt;
  opt.record_ranks = {0};
  opt.overlap = overlap;
  return simulate(w, comm, opt);
}

TEST(OverlapEngine, FullOverlapStretchesComputeByOnePlusS) {
  // 100 us of compute beside a 300 us all-reduce with s = 0.5 the whole time: 150 us.
  const auto w = two_ranks([](workload::ProgramBuilder& b) {
    b.emit(compute(100'000), "gemm");
    b.emit(all_reduce(300'000), "ar");
  });
  class Half final : public cost::OverlapModel {
    double compute_slowdown(const cost::OverlapCompute&, std::span<const cost::OverlapComm>) const override {
      return 0.5;
    }
  } half;
  const auto [end, overlap] = first_compute(run(w, &half));
  EXPECT_EQ(end, 150'000);
  EXPECT_EQ(overlap, 50'000);
  // Without a model nothing changes.
  EXPECT_EQ(first_compute(run(w, nullptr)).first, 100'000);
}

TEST(OverlapEngine, PartialOverlapIsExact) {
  // An all-reduce of 40,000 bytes: s = 0.4 for 40 us. Compute 100 us: in the first 40 us it does
  // 40 / 1.4 = 28.5714 us of work; the remaining 71.4286 us run at full speed: ends at 111.4286 us -> 111,429 ns
  // (rounded up).
  const auto w = two_ranks([](workload::ProgramBuilder& b) {
    b.emit(compute(100'000), "gemm");
    b.emit(all_reduce(40'000), "ar");
  });
  BytesSlowdown model;
  const auto [end, overlap] = first_compute(run(w, &model));
  EXPECT_EQ(end, 40'000 + static_cast<int64_t>(std::ceil(100'000 - 40'000 / 1.4)));
  EXPECT_EQ(end, 111'429);
  EXPECT_EQ(overlap, 11'429);
}

// The planner's one-rank replay (sim/stream_replay.cpp) slows a kernel as the engine does, piecewise, when the
// collectives beside it were issued before it: the two successive all-reduces of the test below, issued first,
// then 100 us of compute: 30 / 1.3 + 50 / 1.5 = 56.4103 us of work by 80 us, the rest at full speed: 123.5897 us.
TEST(OverlapEngine, TheProbeReplaySlowsAKernelAsTheEngineDoes) {
  const auto w = two_ranks([](workload::ProgramBuilder& b) {
    b.emit(all_reduce(30'000), "ar1");
    b.emit(all_reduce(50'000), "ar2");
    b.emit(compute(100'000), "gemm");
  });
  BytesAreNanoseconds comm;
  BytesSlowdown model;
  const StreamReplay plain = replay_streams(w, comm, false);
  const StreamReplay slowed = replay_streams(w, comm, false, {&model, 0, 0});
  EXPECT_NEAR(plain.end_s[2], 100e-6, 1e-15);
  EXPECT_NEAR(slowed.end_s[2], 80e-6 + (100.0 - 30 / 1.3 - 50 / 1.5) * 1e-6, 1e-15);
  EXPECT_EQ(static_cast<int64_t>(std::llround(slowed.end_s[2] * 1e9)), 123'590);  // the engine's end, below
  EXPECT_NEAR(slowed.end_s[1], 80e-6, 1e-15);  // communication itself is not slowed
}

// The planner's rule for a pass beside the data-parallel stream (plan/estimate/zero_stream.hpp, beside_stream): a
// kernel of T seconds with the stream busy for B seconds from its start runs min(B, T (1 + s)) of its time at
// 1 / (1 + s) of its speed, so it lasts T + min(B, T (1 + s)) s / (1 + s). SM-share's s for one 16-channel collective on
// an H100: 16 / 116.
TEST(OverlapEngine, APassBesideTheDataParallelStreamLastsTheEnginesTime) {
  const double s = 16.0 / 116.0;
  EXPECT_DOUBLE_EQ(plan::estimate::beside_stream(10, 0, s), 10);
  EXPECT_NEAR(plan::estimate::beside_stream(10, 4, s), 10 + 4 * 16.0 / 132.0, 1e-12);   // the stream ends first
  EXPECT_NEAR(plan::estimate::beside_stream(10, 100, s), 10 * 132.0 / 116.0, 1e-12);    // busy the whole kernel
  EXPECT_DOUBLE_EQ(plan::estimate::beside_stream(10, 4, 0), 10);
}

TEST(OverlapEngine, TwoSuccessiveCollectivesChangeTheRateTwice) {
  // All-reduce of 30,000 B (s = 0.3, 30 us) then one of 50,000 B (s = 0.5, 50 us) on the DP stream, compute of
  // 100 us beside them. Work done: 30 / 1.3 + 50 / 1.5 = 23.0769 + 33.3333 = 56.4103 us by t = 80 us; the last
  // 43.5897 us at full speed: ends at 123.5897 us -> 123,590 ns.
  const auto w = two_ranks([](workload::ProgramBuilder& b) {
    b.emit(compute(100'000), "gemm");
    b.emit(all_reduce(30'000), "ar1");
    b.emit(all_reduce(50'000), "ar2");
  });
  BytesSlowdown model;
  const double work = 30'000 / 1.3 + 50'000 / 1.5;
  EXPECT_EQ(first_compute(run(w, &model)).first, 80'000 + static_cast<int64_t>(std::ceil(100'000 - work)));
  EXPECT_EQ(first_compute(run(w, &model)).first, 123'590);
}

TEST(OverlapEngine, CommunicationStartingMidwaySlowsTheRest) {
  // The all-reduce waits for a 20 us op on the memcpy stream (not communication: no slowdown). Compute 100 us
  // from 0; all-reduce of 50,000 B (s = 0.5) from 20 us to 70 us: work by 70 us = 20 + 50 / 1.5 = 53.3333 us;
  // the rest, 46.6667 us, at full speed: ends at 116.6667 us -> 116,667 ns.
  const auto w = two_ranks([](workload::ProgramBuilder& b) {
    b.emit(compute(100'000), "gemm");
    Op copy = compute(20'000);
    copy.stream = Stream::Memcpy;
    copy.category = ComputeCategory::Offload;
    const auto c = b.emit(copy, "copy");
    b.emit(all_reduce(50'000), "ar", {c});
  });
  BytesSlowdown model;
  EXPECT_EQ(first_compute(run(w, &model)).first, 116'667);
}

TEST(OverlapEngine, CoefficientFileSumsOverCommunicationKernels) {
  const auto c = cost::OverlapCoefficients::load(cost::OverlapCoefficients::default_path());
  EXPECT_DOUBLE_EQ(c.compute[static_cast<int>(ComputeCategory::Gemm)], 0.2695);  // Echo Table 2, GEMM
  EXPECT_DOUBLE_EQ(c.compute[static_cast<int>(ComputeCategory::Elementwise)], 0.5083);  // Table 2, Sum
  const auto model = cost::make_coefficient_overlap_model(c);
  cost::OverlapCompute gemm;
  gemm.category = ComputeCategory::Gemm;
  cost::OverlapComm ar, p2p;
  p2p.kind = OpKind::P2P;
  const std::vector<cost::OverlapComm> one{ar}, two{ar, p2p};
  EXPECT_DOUBLE_EQ(model->compute_slowdown(gemm, one), 0.2695);
  EXPECT_DOUBLE_EQ(model->compute_slowdown(gemm, two), 2 * 0.2695);
  // Every key is required and bounded; errors name the file and the key.
  const std::string bad = test::write_temp("overlap_bad.yaml", "compute: {gemm: 0.1}\ncomm: {all_reduce: 1}\n");
  try {
    cost::OverlapCoefficients::load(bad);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("compute.grouped_gemm"), std::string::npos) << e.what();
  }
}

TEST(OverlapEngine, JobShowsTheSlowdownInSummaryAndTrace) {
  // DP 2 with gradient reduction overlapping the backward pass: the coefficient model adds time, the breakdown
  // shows it as overlap_slowdown_s and still sums to the step, and the trace carries the factor.
  const std::string yaml = test::small_gpt_yaml(1, 1, 2, 2, "", ", overlap_grad_reduce: true",
                                                   ", overlap_model: coefficients");
  const std::string job = test::write_temp("overlap_job.yaml", yaml);
  const std::string out = test::temp_dir() + "overlap.json", trace = test::temp_dir() + "overlap.trace.json";
  const auto r = test::run_cli("simulate " + job + " --json " + out + " --trace " + trace);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("overlap slowdown"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(test::read_file(out));
  const auto& b = j["breakdown_s"];
  const double slow = b["overlap_slowdown_s"].get<double>();
  EXPECT_GT(slow, 0.0);
  double sum = b["compute"].get<double>() + b["pipeline_bubble"].get<double>() + b["optimizer"].get<double>() + slow;
  for (const auto& [k, v] : b["exposed_comm"].items()) sum += v.get<double>();
  EXPECT_NEAR(sum, j["step_time_s"].get<double>(), 1e-9);
  EXPECT_NE(test::read_file(trace).find("\"overlap_slowdown\":"), std::string::npos);
  // The same job without the model is faster by at most the slowdown.
  const auto plain = run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(test::small_gpt_yaml(1, 1, 2, 2, "", ", overlap_grad_reduce: true")), {0});
  EXPECT_LT(plain.result.step_ns * 1e-9, j["step_time_s"].get<double>());
  EXPECT_GE(plain.result.step_ns * 1e-9 + slow + 1e-9, j["step_time_s"].get<double>());
  // A missing coefficient file is an input error naming it.
  const auto bad = test::run_cli("simulate " + job + " --set simulation.overlap_file=/nonexistent/overlap.yaml");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("/nonexistent/overlap.yaml"), std::string::npos) << bad.output;
}

TEST(OverlapEngine, LearnedModelDrivesTheEngine) {
  // Train the XGBoost model on the synthetic dataset (A800 and H800 rows), then run a job on H800 with it: the
  // engine asks it for every overlapped compute op.
  const std::string model = test::temp_dir() + "slowdown-model.json";
  const auto train = test::run_cli("slowdown train " + test::source_dir() + "/tests/data/slowdown/synthetic.csv --out " +
                                   model + " --folds 2");
  ASSERT_EQ(train.code, 0) << train.output;
  const std::string yaml = test::small_gpt_yaml(1, 1, 2, 2, "", ", overlap_grad_reduce: true",
                                                   ", overlap_model: xgboost, overlap_file: " + model + "");
  const std::string job = test::write_temp("xgb_job.yaml", yaml);
  const std::string out = test::temp_dir() + "xgb.json";
  const auto r = test::run_cli("simulate " + job + " --set cluster.gpu=H800 --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_GT(nlohmann::json::parse(test::read_file(out))["breakdown_s"]["overlap_slowdown_s"].get<double>(), 0.0);
  // A GPU the model never saw (small_gpt_yaml's H100-SXM; issue 15 item 8): not refused, the coefficient model
  // (data/overlap.yaml, Echo's slowdowns for every generation) times the job, and the summary says so.
  const std::string h100_out = test::temp_dir() + "xgb-h100.json";
  const auto h100 = test::run_cli("simulate " + job + " --json " + h100_out);
  ASSERT_EQ(h100.code, 0) << h100.output;
  const std::string said = model + ": slowdown model was trained on A800, H800, not on H100-SXM; the coefficient "
                           "overlap model (data/overlap.yaml) is used instead";
  EXPECT_NE(h100.output.find("note: " + said), std::string::npos) << h100.output;
  const auto hj = nlohmann::json::parse(test::read_file(h100_out));
  ASSERT_EQ(hj["notes"].size(), 1u);
  EXPECT_EQ(hj["notes"][0], said);
  const std::string coeff_out = test::temp_dir() + "coeff-h100.json";
  const auto coeff = test::run_cli("simulate " + job + " --set simulation.overlap_model=coefficients --set "
                                   "simulation.overlap_file= --json " + coeff_out);
  ASSERT_EQ(coeff.code, 0) << coeff.output;
  EXPECT_DOUBLE_EQ(hj["step_time_s"].get<double>(),
                   nlohmann::json::parse(test::read_file(coeff_out))["step_time_s"].get<double>());
  EXPECT_FALSE(nlohmann::json::parse(test::read_file(coeff_out)).contains("notes"));
  // plan times its best rows with the engine: it says the same (issue 15 item 8).
  const auto plan = test::run_cli("plan " + job + " --top 1 --simulate 1");
  ASSERT_EQ(plan.code, 0) << plan.output;
  EXPECT_NE(plan.output.find("engine-timed rows: " + said), std::string::npos) << plan.output;
  const auto missing = test::run_cli("simulate " + job + " --set simulation.overlap_file=");
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("simulation.overlap_file"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace stepsim::sim

namespace stepsim {
namespace {

stepsim::cost::OverlapComm comm_of(stepsim::workload::OpKind kind, stepsim::workload::GroupKind group, int channels) {
  stepsim::cost::OverlapComm c;
  c.kind = kind;
  c.group = group;
  c.channels = channels;
  return c;
}

TEST(OverlapEngine, SmShareModelGivesTheSmsLeft) {
  using stepsim::workload::GroupKind;
  using stepsim::workload::OpKind;
  const auto model = stepsim::cost::make_sm_share_overlap_model({132, 16, 2});
  stepsim::cost::OverlapCompute gemm;
  // One collective whose channel count the collective model does not know: 16 SMs held, 16 / 116 = 0.1379
  // (the H100 measured 1.13x for an 8192^3 GEMM beside 16 copy blocks: data/measurements/h100-sxm/contention.csv).
  const std::vector<stepsim::cost::OverlapComm> one{comm_of(OpKind::Collective, GroupKind::Dp, 0)};
  EXPECT_NEAR(model->compute_slowdown(gemm, one), 16.0 / 116.0, 1e-12);
  // A 24-channel collective and a send: 26 SMs held, 26 / 106.
  const std::vector<stepsim::cost::OverlapComm> two{comm_of(OpKind::Collective, GroupKind::Dp, 24),
                                                    comm_of(OpKind::P2P, GroupKind::Pp, 0)};
  EXPECT_NEAR(model->compute_slowdown(gemm, two), 26.0 / 106.0, 1e-12);
  // Beside userbuffers (the op already runs on the SMs they leave) its TP collectives are not counted again.
  stepsim::cost::OverlapCompute ub = gemm;
  ub.comm_sms = 16;
  const std::vector<stepsim::cost::OverlapComm> tp{comm_of(OpKind::Collective, GroupKind::Tp, 16),
                                                   comm_of(OpKind::Collective, GroupKind::Dp, 8)};
  EXPECT_NEAR(model->compute_slowdown(ub, tp), 8.0 / 124.0, 1e-12);
  EXPECT_NEAR(model->compute_slowdown(gemm, tp), 24.0 / 108.0, 1e-12);
  // However many kernels are in flight the compute keeps a quarter of the SMs: 99 held, s = 3.
  const std::vector<stepsim::cost::OverlapComm> many(10, comm_of(OpKind::Collective, GroupKind::Ep, 32));
  EXPECT_NEAR(model->compute_slowdown(gemm, many), 3.0, 1e-12);
}

TEST(OverlapEngine, SmShareModelRunsAJob) {
  // The same DP 2 job as above with overlap_model: sm_share: slower than without, by at most the reported slowdown.
  const std::string yaml = test::small_gpt_yaml(1, 1, 2, 2, "", ", overlap_grad_reduce: true",
                                                   ", overlap_model: sm_share");
  const std::string job = test::write_temp("sm_share_job.yaml", yaml);
  const std::string out = test::temp_dir() + "sm_share.json";
  const auto r = test::run_cli("simulate " + job + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(test::read_file(out));
  const double slow = j["breakdown_s"]["overlap_slowdown_s"].get<double>();
  EXPECT_GT(slow, 0.0);
  const auto plain = sim::run_simulation(
      stepsim::catalog::shipped(),
      test::job_from_yaml(test::small_gpt_yaml(1, 1, 2, 2, "", ", overlap_grad_reduce: true", ", overlap_model: none")),
      {0});
  EXPECT_LT(plain.result.step_ns * 1e-9, j["step_time_s"].get<double>());
  EXPECT_GE(plain.result.step_ns * 1e-9 + slow + 1e-9, j["step_time_s"].get<double>());
}

}  // namespace
}  // namespace stepsim
