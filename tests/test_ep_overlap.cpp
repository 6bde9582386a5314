// Megatron-Core's combined 1F1B schedule (training.overlap_moe_expert_parallel_comm, --overlap-moe-expert-parallel-comm;
// Megatron-Bridge's moe_a2a_overlap) and --delay-wgrad-compute: the schedule, the node order of a combined step
// (combined_1f1b.py, TransformerLayerSchedulePlan.run), Megatron-Core's preconditions, and how much of the
// all-to-alls it hides.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "stepsim/report/breakdown.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/schedule.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using workload::PipelineAction;

// Two MoE layers (16 experts of FFN 1024, top 4, a shared expert), h 2048, s 4096; EP 16 over two nodes, PP 1.
std::string moe_job(const std::string& training_extra, int global_batch = 64, const std::string& cluster_extra = "") {
  return "model: {name: m, num_layers: 2, hidden_size: 2048, num_attention_heads: 16, ffn_hidden_size: 8192,"
         " activation: swiglu, normalization: rmsnorm, add_bias_linear: false, vocab_size: 32000, seq_length: 4096,"
         " moe: {num_experts: 16, topk: 4, ffn_hidden_size: 1024, shared_expert_ffn_hidden_size: 1024}}\n"
         "parallelism: {tensor: 1, pipeline: 1, expert: 16}\n"
         "training: {micro_batch_size: 1, global_batch_size: " + std::to_string(global_batch) +
         ", precision: bf16, distributed_optimizer: true" + training_extra + "}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 16, gpus_per_node: 8" + cluster_extra + "}\n"
         "simulation: {host_time_scale: 0}\n";  // host issue model off: this small MoE layer would be host-bound
}
const std::string kOverlap = ", overlap_moe_expert_parallel_comm: true";

TEST(EpOverlapSchedule, WithoutPipeliningTheFirstForwardRunsAloneThenEachForwardPairsWithThePreviousBackward) {
  const auto a = workload::pipeline_actions(spec::PipelineSchedule::OneFOneB, 0, 1, 1, 4, false, true);
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0].kind, PipelineAction::Forward);
  EXPECT_EQ(a[0].microbatch, 0);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(a[i].kind, PipelineAction::Combined);
    EXPECT_EQ(a[i].microbatch, i);
    EXPECT_EQ(a[i].b_microbatch, i - 1);
  }
  EXPECT_EQ(a[4].kind, PipelineAction::Backward);
  EXPECT_EQ(a[4].microbatch, 3);
  EXPECT_EQ(workload::warmup_steps(spec::PipelineSchedule::OneFOneB, 0, 1, 1, 4, true), 1);
}

TEST(EpOverlapSchedule, InterleavedRunsOneMoreWarmupForwardAndCombinesEveryPairAfter) {
  const int p = 4, v = 2, m = 8;
  for (int stage = 0; stage < p; ++stage) {
    const int warm = workload::warmup_steps(spec::PipelineSchedule::Interleaved1F1B, stage, p, v, m);
    EXPECT_EQ(workload::warmup_steps(spec::PipelineSchedule::Interleaved1F1B, stage, p, v, m, true), warm + 1);
    const auto a = workload::pipeline_actions(spec::PipelineSchedule::Interleaved1F1B, stage, p, v, m, false, true);
    std::set<std::pair<int, int>> fwd, bwd;
    int forwards_before_first_combined = -1, combined = 0;
    for (const PipelineAction& x : a) {
      if (x.kind == PipelineAction::Exchange) continue;
      if (x.kind == PipelineAction::Combined && forwards_before_first_combined < 0)
        forwards_before_first_combined = static_cast<int>(fwd.size());
      if (x.kind == PipelineAction::Forward || x.kind == PipelineAction::Combined) {
        EXPECT_TRUE(fwd.insert({x.microbatch, x.chunk}).second);
      }
      const int bm = x.kind == PipelineAction::Combined ? x.b_microbatch : x.microbatch;
      const int bc = x.kind == PipelineAction::Combined ? x.b_chunk : x.chunk;
      if (x.kind == PipelineAction::Backward || x.kind == PipelineAction::Combined) {
        EXPECT_TRUE(fwd.count({bm, bc})) << "backward before its forward, stage " << stage;
        EXPECT_TRUE(bwd.insert({bm, bc}).second);
      }
      combined += x.kind == PipelineAction::Combined;
    }
    EXPECT_EQ(fwd.size(), static_cast<size_t>(m * v));
    EXPECT_EQ(bwd.size(), static_cast<size_t>(m * v));
    EXPECT_EQ(forwards_before_first_combined, warm + 1) << stage;
    EXPECT_EQ(combined, m * v - warm - 1) << stage;
  }
}

TEST(EpOverlapJob, MegatronCoresPreconditionsAreChecked) {
  const std::string k = "training.overlap_moe_expert_parallel_comm";
  EXPECT_EQ(test::job_error(moe_job(kOverlap)), "");
  std::string no_ep = moe_job(kOverlap);
  no_ep.replace(no_ep.find("expert: 16"), 10, "expert: 1");
  EXPECT_NE(test::job_error(no_ep).find(k), std::string::npos);
  EXPECT_NE(test::job_error(moe_job(kOverlap + ", recompute: full")).find("recompute: full"), std::string::npos);
  EXPECT_NE(test::job_error(moe_job(kOverlap + ", recompute: selective, recompute_modules: [moe]")).find("'moe'"),
            std::string::npos);
  std::string ag = moe_job(kOverlap);
  ag.replace(ag.find("shared_expert_ffn_hidden_size"), 0, "token_dispatcher: allgather, ");
  EXPECT_NE(test::job_error(ag).find("alltoall or flex"), std::string::npos);
  EXPECT_NE(test::job_error(moe_job(", delay_wgrad_compute: true")).find("training.delay_wgrad_compute"),
            std::string::npos);
  // PP > 1 needs the interleaved schedule.
  const std::string pp = test::small_gpt_yaml(1, 2, 4, 16, "", kOverlap);
  std::string moe_pp = pp;
  moe_pp.replace(moe_pp.find("seq_length: 1024}"), 17,
                 "seq_length: 1024, moe: {num_experts: 8, topk: 2, ffn_hidden_size: 1024}}");
  moe_pp.replace(moe_pp.find("data: 4"), 7, "data: 4, expert: 4");
  EXPECT_NE(test::job_error(moe_pp).find("virtual_stages"), std::string::npos);
}

// Names of the compute-stream and EP-stream ops of one (micro-batch, phase), in issue order, of program 0.
struct Issued {
  std::string name;
  int microbatch;
  workload::Phase phase;
  int layer;
};
std::vector<Issued> issued(const workload::Program& p, workload::Stream s) {
  std::vector<Issued> out;
  for (uint32_t i : p.stream_ops[static_cast<int>(s)]) {
    const workload::Op& op = p.ops[i];
    out.push_back({p.name(op), op.microbatch, op.phase, op.layer});
  }
  return out;
}
size_t position(const std::vector<Issued>& v, const std::string& name, int mb, workload::Phase ph, int layer) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].name == name && v[i].microbatch == mb && v[i].phase == ph && v[i].layer == layer) return i;
  ADD_FAILURE() << name << " mb " << mb << " layer " << layer;
  return 0;
}

TEST(EpOverlapProgram, CombinedStepIssuesTheNodesInMegatronsOrder) {
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(moe_job(kOverlap)));
  const workload::Program& p = w.programs[0];
  using workload::Phase;
  const Phase F = Phase::Forward, B = Phase::Backward;
  // Pair (forward of micro-batch 1, backward of micro-batch 0): forward layer 0 with backward layer 1.
  const auto ep = issued(p, workload::Stream::Ep);
  // EP stream: the backward's combine, the forward's dispatch, the backward's dispatch, the forward's combine.
  const size_t cb = position(ep, "moe_combine_all_to_all_bwd", 0, B, 1), df = position(ep, "moe_dispatch_all_to_all", 1, F, 0);
  const size_t db = position(ep, "moe_dispatch_all_to_all_bwd", 0, B, 1), cf = position(ep, "moe_combine_all_to_all", 1, F, 0);
  EXPECT_LT(cb, df);
  EXPECT_LT(df, db);
  EXPECT_LT(db, cf);
  // The combine node's computation runs on the EP stream: unpermute and bias-dropout-add after the all-to-all.
  EXPECT_GT(position(ep, "mlp_bias_dropout_add", 1, F, 0), cf);
  EXPECT_LT(position(ep, "mlp_bias_dropout_add_bwd", 0, B, 1), cb);
  // Compute stream: the forward's pre-dispatch part (attention, shared expert, router), the backward's experts, the
  // forward's experts, the backward's pre-dispatch part (router, shared expert, attention).
  const auto c = issued(p, workload::Stream::Compute);
  const size_t attn_f = position(c, "core_attention", 1, F, 0), shared_f = position(c, "shared_expert_fc1", 1, F, 0);
  const size_t router_f = position(c, "router", 1, F, 0), mlp_b = position(c, "expert_fc2_dgrad", 0, B, 1);
  const size_t mlp_f = position(c, "expert_fc1", 1, F, 0), router_b = position(c, "router_dgrad", 0, B, 1);
  const size_t shared_b = position(c, "shared_expert_fc1_dgrad", 0, B, 1), attn_b = position(c, "core_attention_bwd", 0, B, 1);
  EXPECT_LT(attn_f, shared_f);
  EXPECT_LT(shared_f, router_f);
  EXPECT_LT(router_f, mlp_b);
  EXPECT_LT(mlp_b, mlp_f);
  EXPECT_LT(mlp_f, router_b);
  EXPECT_LT(router_b, shared_b);
  EXPECT_LT(shared_b, attn_b);
  // The next pair member: forward layer 1 with backward layer 0, after the first pair's last node.
  EXPECT_LT(attn_b, position(c, "core_attention", 1, F, 1));
}

double exposed_ep_s(const sim::Simulation& s) {
  const report::Breakdown b = report::breakdown(s.workload.programs[0], s.result.recorded.at(0), s.result.step_ns);
  return b.exposed_comm_s[report::kEp];
}

TEST(EpOverlapSimulation, SteadyStatePairsHideTheirAllToAllsOnlyTheUnpairedPassesKeepThem) {
  // m = 4 micro-batches, EP all-to-alls much shorter than each node's computation: each pair hides its all-to-alls,
  // so only micro-batch 0's forward and micro-batch 3's backward keep theirs. Without the overlap every pass exposes
  // its own: the exposed EP time falls to about 1/m = 1/4 (closed form; the token-count all-gathers and the pair
  // boundaries make it a little more).
  const std::string fast = ", inter_node: {bandwidth_Gbps: 3200, latency_us: 5}";
  const sim::Simulation off = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(moe_job("", 64, fast)), {0});
  const sim::Simulation on = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(moe_job(kOverlap, 64, fast)), {0});
  ASSERT_EQ(test::job_from_yaml(moe_job("", 64)).num_microbatches(), 4);
  const double ratio = exposed_ep_s(on) / exposed_ep_s(off);
  EXPECT_GT(ratio, 0.2);
  EXPECT_LT(ratio, 0.35);
  EXPECT_LT(on.result.step_ns, off.result.step_ns);
}

TEST(EpOverlapSimulation, SlowAllToAllsAreHiddenOnlyAsFarAsTheOtherHalfComputes) {
  // A 25 Gb/s network: the all-to-alls dwarf the computation. The overlap saves at most the computation of the
  // other half, and the EP stream (one FIFO) still carries every all-to-all: the step is never shorter than it.
  const std::string slow = ", inter_node: {bandwidth_Gbps: 25, latency_us: 5}";
  const sim::Simulation off = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(moe_job("", 64, slow)), {0});
  const sim::Simulation on = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(moe_job(kOverlap, 64, slow)), {0});
  const report::Breakdown b = report::breakdown(on.workload.programs[0], on.result.recorded.at(0), on.result.step_ns);
  int64_t a2a_ns = 0;
  const workload::Program& p = on.workload.programs[0];
  for (const sim::OpRecord& r : on.result.recorded.at(0).ops) {
    if (p.ops[r.op].kind == workload::OpKind::Collective && p.ops[r.op].coll == workload::CollType::AllToAll)
      a2a_ns += r.end_ns - r.begin_ns;
  }
  EXPECT_GE(on.result.step_ns, a2a_ns);
  EXPECT_LT(on.result.step_ns, off.result.step_ns);
  EXPECT_GE(static_cast<double>(on.result.step_ns), static_cast<double>(off.result.step_ns) - b.compute_s * 1e9);
}

TEST(EpOverlapSimulation, DelayedWeightGradientsRunBesideTheDispatchBackward) {
  auto times = [&](const std::string& extra) {
    const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(moe_job(kOverlap + extra)), {0});
    const workload::Program& p = s.workload.programs[0];
    std::map<std::string, std::pair<int64_t, int64_t>> t;
    for (const sim::OpRecord& r : s.result.recorded.at(0).ops) {
      const workload::Op& op = p.ops[r.op];
      if (op.microbatch == 0 && op.layer == 0 && op.phase == workload::Phase::Backward) t[p.name(op)] = {r.begin_ns, r.end_ns};
    }
    return t;
  };
  const auto now = times(""), delayed = times(", delay_wgrad_compute: true");
  // Without the delay the dispatch's backward all-to-all waits for the experts' whole backward; with it, for their
  // input gradients only, and the weight-gradient GEMMs run while it moves.
  EXPECT_GE(now.at("moe_dispatch_all_to_all_bwd").first, now.at("expert_fc1_wgrad").second);
  EXPECT_LT(delayed.at("moe_dispatch_all_to_all_bwd").first, delayed.at("expert_fc1_wgrad").second);
  EXPECT_GE(delayed.at("moe_dispatch_all_to_all_bwd").first, delayed.at("expert_fc1_dgrad").second);
}

}  // namespace
}  // namespace stepsim
