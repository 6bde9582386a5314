// The planner: the analytic path against the engine, the ranking against brute-force simulation, the e2e
// objective against MoFa eq. 43/44 by hand, JSON keys and determinism over thread counts.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/job/nvlink_domain.hpp"
#include "stepsim/plan/estimate/stage_memory.hpp"
#include "stepsim/plan/plan_report.hpp"
#include "stepsim/plan/planner.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

spec::JobSpec tiny(int gpus, int64_t gbs) {
  spec::JobSpec j = test::job_from_yaml(test::small_gpt_yaml(1, 1, gpus, gbs));
  spec::validate(stepsim::catalog::shipped().gpus, j);
  return j;
}

// A small space: 8 GPUs, global batch 8, micro-batch 1, no interleaving, no recompute.
plan::PlannerOptions small_options(int simulate, int threads) {
  plan::PlannerOptions o;
  o.space.gpus = 8;
  o.space.global_batch = 8;
  o.space.micro_batch_sizes = {1};
  o.space.virtual_stages = {1};
  o.space.recomputes = {spec::Recompute::None};
  o.simulate = simulate;
  o.threads = threads;
  o.top = 1000;
  return o;
}

// The compute and collective models a job's planner estimate and engine run use (the job's GPU and precision, its
// cluster's communication model).
struct CostModels {
  std::unique_ptr<cost::ComputeModel> compute;
  std::unique_ptr<cost::CollectiveModel> comm;
};
CostModels cost_models(const spec::JobSpec& base) {
  return {cost::make_roofline_model(stepsim::catalog::shipped().gpus.find(base.cluster.gpu), base.training.precision, test::shipped_efficiency(base.cluster.gpu)),
          sim::make_collective_model(stepsim::catalog::shipped(), base)};
}

// Plan `p` of job `base` (as `j`, its job_for) estimated by the planner and run by the engine.
struct EstimateAndEngine {
  plan::LayerCosts costs;  // the planner's probe
  plan::Estimate estimate;
  report::Summary engine;  // rank 0
};
EstimateAndEngine estimate_and_engine(const spec::JobSpec& base, const spec::JobSpec& j, const plan::Plan& p,
                                      const CostModels& m) {
  EstimateAndEngine r;
  r.costs = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *m.compute, *m.comm);
  r.estimate = plan::estimate_plan(j, r.costs, *m.compute, *m.comm);
  r.engine = report::summarize(sim::run_simulation(stepsim::catalog::shipped(), j, {0}), 0);
  return r;
}

double engine_step(const spec::JobSpec& base, const plan::Plan& p, int gpus, int64_t gbs) {
  spec::JobSpec j = plan::job_for(base, p, gpus, gbs);
  spec::validate(stepsim::catalog::shipped().gpus, j);
  const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), j, {0});
  return report::summarize(s, 0).step_time_s;
}

// Every fitting candidate simulated by the engine: the planner's first plan is the brute-force optimum, and the
// analytic path stays within 3 % of the engine and orders the best plans the same way.
TEST(Planner, RankingAgreesWithBruteForceSimulation) {
  const spec::JobSpec base = tiny(8, 8);
  const plan::PlanResult r = plan::run_planner(stepsim::catalog::shipped(), base, small_options(4, 2));
  ASSERT_GE(r.plans.size(), 4u);
  double best = 1e30;
  plan::Plan best_plan;
  double worst_error = 0;
  std::vector<std::pair<double, double>> pairs;  // (engine, estimate)
  for (const plan::RankedPlan& rp : r.plans) {
    const double t = rp.simulated ? rp.step_time_s : engine_step(base, rp.plan, 8, 8);
    pairs.emplace_back(t, rp.estimate.step_time_s);
    if (t < best) {
      best = t;
      best_plan = rp.plan;
    }
  }
  EXPECT_EQ(r.fits, static_cast<int64_t>(r.plans.size()));
  EXPECT_TRUE(r.plans[0].simulated);
  EXPECT_DOUBLE_EQ(r.plans[0].step_time_s, best) << plan::describe(best_plan) << " vs " << plan::describe(r.plans[0].plan);
  // Accuracy where it matters: the 10 best estimates are within 3 % of the engine (0.6 % since stage 0's DP buckets
  // are replayed; 20 % was allowed before). Far-off plans such as PP 8 with 8 micro-batches miss by more, and are
  // never chosen.
  std::vector<std::pair<double, double>> est_order = pairs;
  std::sort(est_order.begin(), est_order.end(), [](auto& a, auto& b) { return a.second < b.second; });
  for (size_t k = 0; k < 10 && k < est_order.size(); ++k) {
    worst_error = std::max(worst_error, std::fabs(est_order[k].second / est_order[k].first - 1));
  }
  EXPECT_LT(worst_error, 0.03);
  // Ranking consistency: the estimate's best 5 contain the engine's best 3.
  std::vector<std::pair<double, double>> by_engine = pairs, by_est = pairs;
  std::sort(by_engine.begin(), by_engine.end());
  std::sort(by_est.begin(), by_est.end(), [](auto& a, auto& b) { return a.second < b.second; });
  for (int k = 0; k < 3; ++k) {
    bool found = false;
    for (int q = 0; q < 5; ++q) found = found || by_est[q].first == by_engine[k].first;
    EXPECT_TRUE(found) << "engine rank " << k;
  }
}

// The analytic memory is the planner's pruning rule; it must track `stepsim memory` (the exact builder).
TEST(Planner, AnalyticMemoryTracksTheMemoryModel) {
  const spec::JobSpec base = tiny(16, 32);
  for (const plan::Plan& p : {plan::Plan{2, 4, 2, 1, 1, 1, 1, spec::Recompute::None, true, true, false},
                              plan::Plan{1, 2, 8, 1, 1, 2, 1, spec::Recompute::Selective, false, false, false},
                              plan::Plan{4, 2, 2, 1, 1, 1, 2, spec::Recompute::Full, true, true, true},
                              plan::Plan{2, 2, 2, 2, 1, 1, 1, spec::Recompute::None, true, false, false}}) {
    spec::JobSpec j = plan::job_for(base, p, 16, 32);
    spec::validate(stepsim::catalog::shipped().gpus, j);
    const workload::Workload w = workload::build_megatron_workload(j);
    int64_t exact = 0;
    for (const auto& prog : w.programs) exact = std::max(exact, prog.static_memory.total() + prog.activation_peak);
    const hw::GpuSpec& gpu = stepsim::catalog::shipped().gpus.find(j.cluster.gpu);
    const auto compute = cost::make_roofline_model(gpu, j.training.precision, stepsim::catalog::shipped().efficiency.resolve(gpu));
    const auto comm = sim::make_collective_model(stepsim::catalog::shipped(), j);
    const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *compute, *comm);
    const plan::Estimate e = plan::estimate_plan(j, lc, *compute, *comm);
    EXPECT_NEAR(static_cast<double>(e.peak_memory_bytes) / static_cast<double>(exact), 1.0, 0.05) << plan::describe(p);
  }
}

// The layout variants the planner searches (issue 13 item 5): the analytic estimate follows the engine on each —
// TP overlap off and on, ring / all-gather / all-to-all context parallelism — within 5 %, and moves the same way as
// the engine when TP overlap is switched on (the probe replays the rank's streams, so communication that runs beside
// compute is not charged).
TEST(Planner, EstimateFollowsTheEngineOnLayoutVariants) {
  const spec::JobSpec base = tiny(16, 32);
  const CostModels models = cost_models(base);
  const auto& compute = models.compute;
  const auto& comm = models.comm;
  auto both = [&](const plan::Plan& p) {
    spec::JobSpec j = plan::job_for(base, p, 16, 32);
    spec::validate(stepsim::catalog::shipped().gpus, j);
    const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *compute, *comm);
    return std::make_pair(plan::estimate_plan(j, lc, *compute, *comm).step_time_s, engine_step(base, p, 16, 32));
  };
  plan::Plan tp{4, 2, 2, 1, 1, 1, 1, spec::Recompute::None, true, true, false};
  const auto off = both(tp);
  tp.tp_comm_overlap = true;
  const auto on = both(tp);
  EXPECT_NEAR(off.first / off.second, 1.0, 0.05);
  EXPECT_NEAR(on.first / on.second, 1.0, 0.05);
  EXPECT_EQ(on.first < off.first, on.second < off.second) << "estimate " << off.first << " -> " << on.first
                                                           << ", engine " << off.second << " -> " << on.second;
  for (const spec::CpCommType t : {spec::CpCommType::P2P, spec::CpCommType::AllGather, spec::CpCommType::A2A}) {
    plan::Plan cp{2, 2, 2, 2, 1, 1, 1, spec::Recompute::None, true, true, false};
    cp.cp_comm_type = t;
    const auto r = both(cp);
    EXPECT_NEAR(r.first / r.second, 1.0, 0.05) << spec::name_of(t);
  }
  // Hierarchical CP (all-to-all inside pairs, a ring across them): the compute stream's waits for either level are CP
  // time (they were dropped before, which put a GPT-3 plan with cp:a2a+p2p 13 % under the engine).
  plan::Plan hcp{1, 2, 2, 4, 1, 1, 1, spec::Recompute::None, true, true, false};
  hcp.cp_comm_type = spec::CpCommType::A2AP2P;
  hcp.cp_a2a = 2;
  const auto h = both(hcp);
  EXPECT_NEAR(h.first / h.second, 1.0, 0.05) << "cp:a2a+p2p: estimate " << h.first << " s, engine " << h.second << " s";
  const plan::LayerCosts hl = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(hcp), *compute, *comm);
  double hcp_exposed = 0;
  for (int l = 0; l < base.model.num_layers; ++l) hcp_exposed += hl.fwd[l].cp_s + hl.bwd[l].cp_s;
  EXPECT_GT(hcp_exposed, 0.0);
}

// The host issue model in the estimate (issue 17 item 4). A dense model has no host syncs, so its host issues the next
// micro-batch while the GPU runs this one's backward and the pipeline's waits: a stage is host-bound only where its
// host needs longer for the whole step than its GPU, and then the step is its host's issue time of m micro-batches
// and the tail. The tiny model's layers (8 ms of host per micro-batch at speed 0.65, far more than their kernels)
// make every split host-bound; the estimate follows the engine within 3 % without and with pipelining. Before, the
// per-layer waits of a one-micro-batch probe were added to the pipeline's passes and bubble: PP 2 +6 %, PP 2 with VP 2
// +6 %, PP 4 +17 %.
TEST(Planner, EstimateFollowsAHostThatIssuesAhead) {
  std::string yaml = test::small_gpt_yaml(1, 1, 8, 32);
  yaml.replace(yaml.find("host_time_scale: 0"), 18, "host_time_scale: 0.65");
  const spec::JobSpec base = test::job_from_yaml(yaml);
  const CostModels models = cost_models(base);
  const auto& compute = models.compute;
  const auto& comm = models.comm;
  for (const plan::Plan& p : {plan::Plan{1, 1, 8}, plan::Plan{2, 1, 4}, plan::Plan{2, 2, 2}, plan::Plan{1, 4, 2},
                              plan::Plan{1, 2, 4, 1, 1, 1, 2}}) {
    spec::JobSpec j = plan::job_for(base, p, 8, 32);
    spec::validate(stepsim::catalog::shipped().gpus, j);
    const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *compute, *comm);
    EXPECT_FALSE(lc.host_syncs);
    const plan::Estimate e = plan::estimate_plan(j, lc, *compute, *comm);
    const report::Summary engine = report::summarize(sim::run_simulation(stepsim::catalog::shipped(), j, {0}), 0);
    EXPECT_GT(engine.breakdown.host_gap_s, 0.2 * engine.step_time_s) << plan::describe(p);  // host-bound
    EXPECT_GT(e.stages.host_s, 0.0) << plan::describe(p);
    EXPECT_NEAR(e.step_time_s / engine.step_time_s, 1.0, 0.03)
        << plan::describe(p) << ": estimate " << e.step_time_s << " s, engine " << engine.step_time_s << " s";
  }
}

// ZeRO-2/3 under a host that issues more slowly than the GPU runs (the tiny model, host-bound at every split), from
// a fast network to one where the data-parallel stream is the bottleneck (400 to 10 Gb/s per GPU, DP across two
// nodes without pipelining): the stream's replay runs the host on its own timeline, so host-bound passes and the
// GPU's waits for gathers overlap as in the engine. Within 3 % everywhere; before, the replay ran host-bound passes
// at their host's length and the step kept only their GPU time plus the replay's waits: ZeRO-3 at 25 Gb/s -33 %, at
// 10 Gb/s -24 % (a Llama-2 70B ZeRO-3 plan on 1,024 GPUs -12 %).
TEST(Planner, ZeroReplayKeepsTheHostBoundPasses) {
  std::string yaml = test::small_gpt_yaml(1, 1, 16, 64);
  yaml.replace(yaml.find("host_time_scale: 0"), 18, "host_time_scale: 0.65");
  spec::JobSpec base = test::job_from_yaml(yaml);
  const hw::GpuSpec& gpu = stepsim::catalog::shipped().gpus.find(base.cluster.gpu);
  const auto compute = cost::make_roofline_model(gpu, base.training.precision, stepsim::catalog::shipped().efficiency.resolve(gpu));
  for (const double gbps : {400.0, 100.0, 25.0, 10.0}) {
    base.cluster.inter_node.bandwidth_GBps = gbps / 8;
    const auto comm = sim::make_collective_model(stepsim::catalog::shipped(), base);
    for (plan::Plan p : {plan::Plan{1, 1, 16}, plan::Plan{1, 2, 8}}) {
      for (const int stage : {2, 3}) {
        p.zero_stage = stage;
        spec::JobSpec j = plan::job_for(base, p, 16, 64);
        spec::validate(stepsim::catalog::shipped().gpus, j);
        const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *compute, *comm);
        const plan::Estimate e = plan::estimate_plan(j, lc, *compute, *comm);
        const report::Summary engine = report::summarize(sim::run_simulation(stepsim::catalog::shipped(), j, {0}), 0);
        EXPECT_NEAR(e.step_time_s / engine.step_time_s, 1.0, 0.03)
            << plan::describe(p) << " at " << gbps << " Gb/s: estimate " << e.step_time_s << " s, engine "
            << engine.step_time_s << " s";
      }
    }
  }
}

// ZeRO-2 and ZeRO-3 (searched optimizer variants, issue 13 item 5): the analytic estimate replays each stage's
// data-parallel stream over the step's passes (stage 3's per-layer gathers prefetched one layer ahead, the
// per-micro-batch gradient reduce-scatters of both, the backlog they leave for the next pass) and follows the engine
// within 2 % without pipelining, on a fast and a slow network (100 and 10 Gb/s per GPU: at 10 the stream is the
// bottleneck and ZeRO-2 takes 2.7x, ZeRO-3 4.7x ZeRO-1's step); memory within 5 %. With PP 2 ZeRO-1 and 2 are
// within 1 % (the pipeline's fill and drain counted from the other stages' passes, one blocking exchange per
// forward/backward pair on the last stage), ZeRO-3 within 4.5 % (3.8 %; 5.1 % before the stream replay gave the
// pipeline's waits to the stream and the fill and drain counted only the gathers of one forward and one backward per
// stage); with PP 4 all three within 2 % (ZeRO-3 -0.7 %; +0.5 % before).
TEST(Planner, EstimateFollowsTheEngineOnZeroStages) {
  for (const int gbps : {100, 10}) {
    spec::JobSpec base = tiny(16, 32);
    base.cluster.inter_node.bandwidth_GBps = gbps / 8.0;
    const CostModels models = cost_models(base);
    const auto& compute = models.compute;
    const auto& comm = models.comm;
    for (const int pipeline : {1, 2, 4}) {
      if (pipeline >= 2 && gbps == 10) continue;
      std::map<int, double> engine;
      for (const int stage : {1, 2, 3}) {
        plan::Plan p{2, pipeline, 8 / pipeline, 1, 1, 1, 1, spec::Recompute::None, true, false, false};
        p.zero_stage = stage;
        spec::JobSpec j = plan::job_for(base, p, 16, 32);
        spec::validate(stepsim::catalog::shipped().gpus, j);
        ASSERT_EQ(j.training.zero_stage, stage);
        const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *compute, *comm);
        const plan::Estimate e = plan::estimate_plan(j, lc, *compute, *comm);
        const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), j, {0});
        const report::Summary sum = report::summarize(s, 0);
        engine[stage] = sum.step_time_s;
        EXPECT_NEAR(e.step_time_s / sum.step_time_s, 1.0, pipeline == 2 && stage == 3 ? 0.045 : 0.02)
            << plan::describe(p) << " at " << gbps << " Gb/s";
        EXPECT_NEAR(static_cast<double>(e.peak_memory_bytes) / static_cast<double>(sum.peak_bytes_max), 1.0, 0.05)
            << plan::describe(p);
      }
      if (pipeline == 1 && gbps == 10) {
        EXPECT_GT(engine[2], 2 * engine[1]);
        EXPECT_GT(engine[3], 4 * engine[1]);
      }
    }
  }
}

// ZeRO-3 through a deep pipeline whose data-parallel stream binds (GPT-3 175B, TP 1 x PP 24 x CP 4 on 96 H800s): in the
// pipeline's drain a stage's last backward waits for the stages after it, their own waits for gathers included, and
// its stream catches up meanwhile. The estimate replays each stage once more with the other stages' fill and drain
// waits (docs/PLANNER.md, "ZeRO-2 and ZeRO-3"); counting each stage's whole last-backward gathers in the drain, as
// before, it was 3.5 % high at global batch 128 (the sampled plan of bench_plan_accuracy).
TEST(Planner, Zero3DrainWaitsForTheStagesAfterIt) {
  spec::JobSpec base = spec::load_job_file(stepsim::catalog::shipped().gpus, test::source_dir() + "/examples/gpt3-175b-h800.yaml");
  base.simulation.calibration_store = "none";
  spec::validate(stepsim::catalog::shipped().gpus, base);
  const CostModels models = cost_models(base);
  for (const int64_t gbs : {128, 48}) {
    plan::Plan p{1, 24, 1, 4, 1, 1, 1, spec::Recompute::None, true, false, false};
    p.zero_stage = 3;
    p.cp_comm_type = spec::CpCommType::A2A;
    spec::JobSpec j = plan::job_for(base, p, 96, gbs);
    spec::validate(stepsim::catalog::shipped().gpus, j);
    const auto [lc, e, engine] = estimate_and_engine(base, j, p, models);
    EXPECT_GT(engine.breakdown.exposed_comm_s[report::kDp], 0.5 * engine.step_time_s) << "the stream binds";
    EXPECT_NEAR(e.step_time_s / engine.step_time_s, 1.0, 0.01)
        << plan::describe(p) << ", global batch " << gbs << ": estimate " << e.step_time_s << " s, engine "
        << engine.step_time_s << " s";
  }
}

// A pipeline whose stages meet across nodes at some boundaries and inside a node at others (PP 8 over two or four
// nodes of 8 GPUs: one or three slow boundaries): the exchanges' pace is the slowest stage with its own two exchanges
// at their links' rates, and the fill and drain cross every boundary once each way. With every boundary timed as stage
// 0's (inside a node) the estimate was 35 % and 44 % low at 10 Gb/s per GPU, 3 % and 14 % at 25; now within 4 %.
TEST(Planner, EstimateTimesEachStageBoundaryAtItsOwnLink) {
  for (const int gbps : {25, 10}) {
    for (const int gpus : {16, 32}) {
      spec::JobSpec base = tiny(gpus, 64);
      base.cluster.inter_node.bandwidth_GBps = gbps / 8.0;
      const CostModels models = cost_models(base);
      for (const int stage : {1, 3}) {
        plan::Plan p{1, 8, gpus / 8, 1, 1, 1, 1, spec::Recompute::None, true, false, false};
        p.zero_stage = stage;
        spec::JobSpec j = plan::job_for(base, p, gpus, 64);
        spec::validate(stepsim::catalog::shipped().gpus, j);
        const auto [lc, e, summary] = estimate_and_engine(base, j, p, models);
        const double engine = summary.step_time_s;
        EXPECT_NEAR(e.step_time_s / engine, 1.0, 0.04)
            << plan::describe(p) << " at " << gbps << " Gb/s: estimate " << e.step_time_s << " s, engine " << engine;
      }
    }
  }
}

// Interleaved pipeline with overlap_grad_reduce where the gradient reduction is the bottleneck (16 GPUs, DP 4 inside
// a node whose links are slowed to 20 and 5 GB/s): Megatron-Core buckets only the first stage's first model chunk;
// every other chunk reduces its gradients as one bucket once its last backward has run, so most of a stage's
// reduction hides behind its cool-down, and stage 0's other chunks delay the buckets of its first. The estimate
// replays them (docs/PLANNER.md, "Overlapped gradient reduction"): within 1.5 % of the engine at VP 2 and 4. Taking
// each later stage's whole reduction as exposed after its last backward put it 4.1 % high at VP 4, 5 GB/s; the
// chunk buckets without stage 0's backlog 3.6 % low.
TEST(Planner, InterleavedStagesReduceEachChunkAsItsBackwardEnds) {
  for (const double link_GBps : {20.0, 5.0}) {
    spec::JobSpec base = tiny(16, 32);
    base.cluster.intra_node.bandwidth_GBps = link_GBps;
    const CostModels models = cost_models(base);
    const auto& compute = models.compute;
    const auto& comm = models.comm;
    double step_vp1 = 0;
    for (const int vp : {1, 2, 4}) {
      plan::Plan p{2, 2, 4, 1, 1, 1, vp, spec::Recompute::None, true, true, false};
      p.zero_stage = 1;
      spec::JobSpec j = plan::job_for(base, p, 16, 32);
      spec::validate(stepsim::catalog::shipped().gpus, j);
      ASSERT_EQ(j.parallelism.virtual_stages, vp);
      ASSERT_TRUE(j.training.overlap_grad_reduce);
      const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *compute, *comm);
      const plan::Estimate e = plan::estimate_plan(j, lc, *compute, *comm);
      const double engine = report::summarize(sim::run_simulation(stepsim::catalog::shipped(), j, {0}), 0).step_time_s;
      EXPECT_NEAR(e.step_time_s / engine, 1.0, 0.015) << plan::describe(p) << " at " << link_GBps << " GB/s";
      if (vp == 1) step_vp1 = engine;
      // The chunks' buckets hide reduction that VP 1 (one bucket per later stage, after its last backward) exposes.
      if (vp == 4) {
        EXPECT_LT(engine, 0.97 * step_vp1);
      }
    }
  }
}

// CPU optimizer offload is kept from the job (not searched): the analytic estimate charges the copies and the CPU's
// Adam as the builder emits them, in series and pipelined, within 5 % of the engine.
TEST(Planner, EstimateFollowsTheEngineUnderOptimizerOffload) {
  for (const bool overlap : {false, true}) {
    spec::JobSpec base = tiny(16, 32);
    base.training.optimizer_offload = true;
    base.training.optimizer_offload_overlap = overlap;
    const CostModels models = cost_models(base);
    const auto& compute = models.compute;
    const auto& comm = models.comm;
    const plan::Plan p{2, 2, 4, 1, 1, 1, 1, spec::Recompute::None, true, true, false};
    spec::JobSpec j = plan::job_for(base, p, 16, 32);
    spec::validate(stepsim::catalog::shipped().gpus, j);
    const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *compute, *comm);
    const double estimate = plan::estimate_plan(j, lc, *compute, *comm).step_time_s;
    const double engine = engine_step(base, p, 16, 32);
    spec::JobSpec plain = base;
    plain.training.optimizer_offload = plain.training.optimizer_offload_overlap = false;
    EXPECT_GT(engine, engine_step(plain, p, 16, 32) * 1.05) << "the offload must cost something here";
    EXPECT_NEAR(estimate / engine, 1.0, 0.05) << "overlap " << overlap;
  }
}

// Activation offload (kept from the job): the probe's host copies run on the memcpy stream beside compute and only the
// wait they cause is charged (they were once added to the layers' compute as if serial: 63 % off the engine). The
// time offload adds to the step matches the engine's within 3.5 % (2.57 ms against 2.49 ms with 2 layers offloaded,
// the difference of two steps each within 0.5 % of the engine's).
TEST(Planner, EstimateFollowsTheEngineUnderActivationOffload) {
  const plan::Plan p{2, 1, 8, 1, 1, 1, 1, spec::Recompute::None, true, true, false};
  auto both = [&](int layers) {
    spec::JobSpec base = tiny(16, 32);
    base.training.activation_offload_layers = layers;
    const CostModels models = cost_models(base);
    const auto& compute = models.compute;
    const auto& comm = models.comm;
    spec::JobSpec j = plan::job_for(base, p, 16, 32);
    spec::validate(stepsim::catalog::shipped().gpus, j);
    const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *compute, *comm);
    return std::make_pair(plan::estimate_plan(j, lc, *compute, *comm).step_time_s, engine_step(base, p, 16, 32));
  };
  const auto none = both(0);
  for (const int layers : {2, 6}) {  // of the small GPT's 8: mostly hidden, then mostly exposed
    const auto r = both(layers);
    const double engine_added = r.second - none.second;
    EXPECT_GT(engine_added, 0.0);
    EXPECT_NEAR((r.first - none.first) / engine_added, 1.0, 0.035) << layers << " layers offloaded";
    EXPECT_NEAR(r.first / r.second, 1.0, 0.01) << layers << " layers offloaded";
  }
}

// Expert tensor parallel 1 (a searched layout): the experts are whole on each rank and their optimizer states are
// sharded over the larger expert-data-parallel group; the analytic memory follows the builder's (it used to assume
// expert TP = TP and overstated a Mixtral plan's peak by half: 67.3 against the engine's 43.9 GiB).
TEST(Planner, AnalyticMemoryFollowsExpertTensorOne) {
  spec::JobSpec base = test::job_from_yaml(
      "model: {name: m, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
      " activation: swiglu, vocab_size: 32000, seq_length: 1024, moe: {num_experts: 8, topk: 2, ffn_hidden_size: 2048}}\n"
      "parallelism: {tensor: 2, expert: 4, data: 4, sequence_parallel: true}\n"
      "training: {micro_batch_size: 1, global_batch_size: 8, distributed_optimizer: true}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\n");
  spec::validate(stepsim::catalog::shipped().gpus, base);
  const CostModels models = cost_models(base);
  const auto& compute = models.compute;
  const auto& comm = models.comm;
  for (const int et : {0, 1}) {
    plan::Plan p{2, 1, 4, 1, 4, 1, 1, spec::Recompute::None, true, true, false};
    p.expert_tensor = et;
    spec::JobSpec j = plan::job_for(base, p, 8, 8);
    spec::validate(stepsim::catalog::shipped().gpus, j);
    const workload::Workload w = workload::build_megatron_workload(j);
    const int64_t exact = w.programs[0].static_memory.total() + w.programs[0].activation_peak;
    const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *compute, *comm);
    const plan::Estimate e = plan::estimate_plan(j, lc, *compute, *comm);
    EXPECT_NEAR(static_cast<double>(e.peak_memory_bytes) / static_cast<double>(exact), 1.0, 0.05) << plan::describe(p);
  }
}

TEST(Planner, SameResultWithOneOrTwoThreads) {
  const spec::JobSpec base = tiny(8, 8);
  plan::PlannerOptions o = small_options(3, 1);
  o.top = 10;
  const plan::ReportContext ctx{"tiny", "H100-SXM", 8, 8, o};
  const std::string one = plan::plan_json(plan::run_planner(stepsim::catalog::shipped(), base, o), ctx).dump();
  o.threads = 2;
  const std::string two = plan::plan_json(plan::run_planner(stepsim::catalog::shipped(), base, o), ctx).dump();
  EXPECT_EQ(one, two);
}

// Issue 13 item 5: a plan within the memory margin of capacity is flagged at risk and ranked after every plan below
// it, whatever its step time; margin 0 ranks by the objective alone.
TEST(Planner, PlansNearCapacityRankAfterSafeOnes) {
  const spec::JobSpec base = tiny(8, 8);
  plan::PlannerOptions o = small_options(2, 1);
  o.memory_margin = 0;
  const plan::PlanResult plain = plan::run_planner(stepsim::catalog::shipped(), base, o);
  ASSERT_GE(plain.plans.size(), 3u);
  for (const auto& p : plain.plans) EXPECT_FALSE(p.memory_at_risk);
  EXPECT_EQ(plain.at_risk, 0);
  // A margin that puts the middle of the peaks at risk: the plans split in two classes, safe first, each in
  // objective order (engine rows first within a class), and the flag is in the JSON.
  std::vector<int64_t> peaks;
  for (const auto& p : plain.plans) peaks.push_back(p.peak_memory_bytes);
  std::sort(peaks.begin(), peaks.end());
  const int64_t mid = peaks[peaks.size() / 2];
  o.memory_margin = 1.0 - (static_cast<double>(mid) + 0.5) / static_cast<double>(plain.capacity_bytes);  // safe: peak <= mid
  ASSERT_GT(o.memory_margin, 0.0);
  ASSERT_LT(o.memory_margin, 0.99);
  const plan::PlanResult r = plan::run_planner(stepsim::catalog::shipped(), base, o);
  ASSERT_EQ(r.plans.size(), plain.plans.size());
  bool seen_risk = false;
  int risky = 0;
  for (const auto& p : r.plans) {
    EXPECT_EQ(p.memory_at_risk, p.peak_memory_bytes > mid);
    if (p.memory_at_risk) ++risky;
    EXPECT_FALSE(seen_risk && !p.memory_at_risk) << "a safe plan ranked after one at risk";
    seen_risk = seen_risk || p.memory_at_risk;
  }
  EXPECT_GT(risky, 0);
  EXPECT_LT(risky, static_cast<int>(r.plans.size()));
  EXPECT_GT(r.at_risk, 0);
  const plan::ReportContext ctx{"tiny", "H100-SXM", 8, 8, o};
  const auto j = plan::plan_json(r, ctx);
  EXPECT_EQ(j["plans"].back()["memory_at_risk"].get<bool>(), true);
  EXPECT_NE(plan::plan_text(r, ctx).find("memory at risk"), std::string::npos);
}

// A distribution over 2 "processes" in one process: each half computed separately, allgather by hand.
TEST(Planner, SplitAcrossProcessesGivesTheSameResult) {
  const spec::JobSpec base = tiny(8, 8);
  plan::PlannerOptions o = small_options(3, 1);
  o.top = 10;
  const plan::ReportContext ctx{"tiny", "H100-SXM", 8, 8, o};
  const std::string single = plan::plan_json(plan::run_planner(stepsim::catalog::shipped(), base, o), ctx).dump();
  // Rank 0 and rank 1 run in lockstep on two threads; the allgather exchanges their parts.
  std::vector<std::vector<char>> parts(2);
  std::map<int, std::vector<std::vector<char>>> done;  // generation -> everyone's parts
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0, generation = 0;
  auto allgather_for = [&](int rank) {
    return [&, rank](const std::vector<char>& mine) {
      std::unique_lock<std::mutex> lock(mu);
      const int gen = generation;
      parts[rank] = mine;
      if (++arrived == 2) {
        arrived = 0;
        done[gen] = parts;
        ++generation;
        cv.notify_all();
      } else {
        cv.wait(lock, [&] { return generation != gen; });
      }
      return done.at(gen);
    };
  };
  std::string got[2];
  std::thread t1([&] { got[1] = plan::plan_json(plan::run_planner(stepsim::catalog::shipped(), base, o, {1, 2, allgather_for(1)}), ctx).dump(); });
  got[0] = plan::plan_json(plan::run_planner(stepsim::catalog::shipped(), base, o, {0, 2, allgather_for(0)}), ctx).dump();
  t1.join();
  EXPECT_EQ(got[0], single);
  EXPECT_EQ(got[1], single);
}

TEST(Planner, JsonCarriesTheIssueKeysBestFirst) {
  const spec::JobSpec base = tiny(8, 8);
  plan::PlannerOptions o = small_options(2, 2);
  o.top = 5;
  const nlohmann::json j = plan::plan_json(plan::run_planner(stepsim::catalog::shipped(), base, o), {"tiny", "H100-SXM", 8, 8, o});
  ASSERT_EQ(j["plans"].size(), 5u);
  for (const auto& p : j["plans"]) {
    for (const char* k : {"tensor", "pipeline", "data", "context", "expert", "micro_batch_size", "virtual_stages",
                          "recompute", "step_time_s", "tflops_per_gpu", "peak_memory_bytes"}) {
      EXPECT_TRUE(p.contains(k)) << k;
    }
    EXPECT_EQ(p["tensor"].get<int>() * p["pipeline"].get<int>() * p["data"].get<int>() * p["context"].get<int>(), 8);
  }
  // The two engine-timed rows lead, ranked among themselves; plans the model cannot tell apart from them (one tie
  // group here) are ordered by the stated secondary rule, so estimates may sit between them.
  std::vector<double> engine_rows;
  for (const auto& p : j["plans"]) {
    if (p["timed_by"] == "engine") engine_rows.push_back(p["step_time_s"].get<double>());
  }
  ASSERT_EQ(engine_rows.size(), 2u);
  EXPECT_LE(engine_rows[0], engine_rows[1]);
  EXPECT_EQ(j["plans"][0]["timed_by"], "engine");
  EXPECT_EQ(j["pruning"].size(), static_cast<size_t>(plan::kNumRules));
}

// Objective e2e: the interval is eq. 44's optimum rounded by the up/down rule, the time is eq. 38-39 solved,
// both recomputed here from the closed forms (u_b = 0.3 x 141 + 0.6 x 262 + 0.1 x 307 = 230.2 s).
TEST(Planner, EndToEndObjectivePicksTheEq44Interval) {
  const spec::JobSpec base = tiny(8, 8);
  plan::PlannerOptions o = small_options(1, 2);
  o.top = 3;
  o.objective = plan::Objective::E2E;
  o.e2e.steps = 10000000;
  o.e2e.failures_per_node_day = 5;  // high, so the interval (~1e5 steps of ~4 ms) is well below the run
  o.e2e.storage_GBps = 0.1;
  o.price_per_gpu_hour = 2.0;
  const plan::PlanResult r = plan::run_planner(stepsim::catalog::shipped(), base, o);
  ASSERT_FALSE(r.plans.empty());
  const plan::RankedPlan& p = r.plans[0];
  const double lambda = 1 * 5.0 / 86400.0, ub = 230.2, ts = r.checkpoint_save_s, t = p.step_time_s;
  const double cont = (-ts + std::sqrt(ts * ts - 2 * ts * ub + 2 * ts / lambda)) / t;
  auto g = [&](double i) { return t * (1 + ts / (i * t)) / (1 - lambda * (ub + i * t / 2)); };
  const double lo = std::floor(cont), hi = std::ceil(cont);
  ASSERT_LT(hi, 1e7);
  EXPECT_EQ(p.checkpoint_interval, static_cast<int64_t>(g(lo) <= g(hi) ? lo : hi));
  const double i = static_cast<double>(p.checkpoint_interval);
  const double total = (1e7 * t + std::ceil(1e7 / i) * ts) / (1 - lambda * (ub + i * t / 2));
  EXPECT_NEAR(p.e2e_time_s / total, 1.0, 1e-12);
  EXPECT_NEAR(p.cost_usd, total / 3600 * 8 * 2.0, 1e-9 * total);
  // Checkpoint: weights + optimizer state (2 + 12 bytes per parameter under bf16) at 0.1 GB/s.
  EXPECT_GT(ts, 0);
  // Ranked by e2e time, which is increasing in the step time at fixed nodes and save time.
  for (size_t k = 1; k < r.plans.size(); ++k) {
    if (r.plans[k].simulated == r.plans[k - 1].simulated) {
      EXPECT_LE(r.plans[k - 1].e2e_time_s, r.plans[k].e2e_time_s);
    }
  }
}

TEST(Planner, NoFeasiblePlanIsAnAnswerWithReasons) {
  // 405B-like layer widths on 8 GPUs: nothing fits in 80 GB.
  spec::JobSpec j = test::job_from_yaml(
      "model: {name: big, num_layers: 32, hidden_size: 16384, num_attention_heads: 128, ffn_hidden_size: 53248,"
      " vocab_size: 128256, seq_length: 4096}\n"
      "parallelism: {tensor: 8}\ntraining: {micro_batch_size: 1, global_batch_size: 8}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\n");
  spec::validate(stepsim::catalog::shipped().gpus, j);
  plan::PlannerOptions o;
  o.space.gpus = 8;
  o.space.global_batch = 8;
  o.simulate = 2;
  const plan::PlanResult r = plan::run_planner(stepsim::catalog::shipped(), j, o);
  EXPECT_TRUE(r.plans.empty());
  EXPECT_EQ(r.fits, 0);
  EXPECT_EQ(r.removed[static_cast<int>(plan::Rule::Memory)], r.estimated);
  const std::string text = plan::plan_text(r, {"big", "H100-SXM", 8, 8, o});
  EXPECT_NE(text.find("no feasible plan"), std::string::npos);
  EXPECT_NE(text.find("rule memory"), std::string::npos);
}

// Engine-timed MoE plans whose layers are host-bound carry the host-bound step (the summary's, by the same
// simulation), flagged in the text and JSON with a note; the ranking stays by the GPU-bound step. Dense plans and
// estimated rows carry none.
TEST(Planner, HostBoundMoePlansAreFlaggedNotReranked) {
  const std::string yaml =
      "model: {name: m, num_layers: 4, hidden_size: 2048, num_attention_heads: 32, num_query_groups: 4, kv_channels: 128,"
      " ffn_hidden_size: 6144, activation: swiglu, normalization: rmsnorm, add_bias_linear: false, vocab_size: 32000,"
      " seq_length: 4096, moe: {num_experts: 128, topk: 8, ffn_hidden_size: 768}}\n"
      "parallelism: {expert: 8}\n"
      "training: {micro_batch_size: 1, global_batch_size: 8, precision: bf16}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\nsimulation: {calibration_store: none}\n";
  spec::JobSpec base = test::job_from_yaml(yaml);
  spec::validate(stepsim::catalog::shipped().gpus, base);
  plan::PlannerOptions o = small_options(2, 1);
  o.top = 4;
  o.tie_tolerance = 0;  // ranked by the objective alone
  const plan::PlanResult r = plan::run_planner(stepsim::catalog::shipped(), base, o);
  ASSERT_GE(r.plans.size(), 3u);
  int flagged = 0;
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const plan::RankedPlan& p = r.plans[i];
    if (!p.simulated) {
      EXPECT_EQ(p.host_bound_step_time_s, 0.0);
      continue;
    }
    spec::JobSpec j = plan::job_for(base, p.plan, 8, 8);
    spec::validate(stepsim::catalog::shipped().gpus, j);
    const report::Summary sum = report::summarize(sim::run_simulation(stepsim::catalog::shipped(), j, {0}), 0);
    EXPECT_DOUBLE_EQ(p.host_bound_step_time_s, sum.step_time_host_bound_s) << plan::describe(p.plan);
    EXPECT_DOUBLE_EQ(p.step_time_s, sum.step_time_s);
    flagged += p.host_bound_step_time_s > p.step_time_s ? 1 : 0;
    if (i > 0 && r.plans[i - 1].simulated) {
      EXPECT_LE(r.plans[i - 1].step_time_s, p.step_time_s);
    }
  }
  EXPECT_EQ(flagged, 2);  // both engine-timed plans: this layer is host-bound at every split of 8 GPUs
  const plan::ReportContext ctx{"m", "H100-SXM", 8, 8, o};
  EXPECT_NE(plan::plan_text(r, ctx).find("host-bound up to "), std::string::npos);
  EXPECT_NE(plan::plan_text(r, ctx).find("host-bound up to X s: an engine-timed MoE plan"), std::string::npos);
  EXPECT_DOUBLE_EQ(plan::plan_json(r, ctx)["plans"][0]["host_bound_step_time_s"].get<double>(),
                   r.plans[0].host_bound_step_time_s);
  const plan::PlanResult dense = plan::run_planner(stepsim::catalog::shipped(), tiny(8, 8), small_options(2, 1));
  for (const auto& p : dense.plans) EXPECT_EQ(p.host_bound_step_time_s, 0.0);
  EXPECT_EQ(plan::plan_text(dense, plan::ReportContext{"tiny", "H100-SXM", 8, 8, small_options(2, 1)}).find("host-bound"),
            std::string::npos);
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// MoE layers whose forward the host issues more slowly than the GPU runs it (Mixtral's layer under TP 2 x CP 2): the
// host's lead ends at every layer's sync, and a chunk of one layer under PP 4 x VP 2 has a backward of one layer
// between two forwards, not the whole model's as in the probe, so the host is still issuing when the next forward
// starts. The estimate chains each stage's sync-to-sync segments (a flow shop of host and GPU) and follows the engine
// within 3 % at PP 1, 2 and 4 x VP 2, and under full recompute (whose backward re-runs the forward, syncs included).
// The probe's per-layer waits alone, as before, gave PP 2 +4.2 % and PP 4 x VP 2 +10.4 % (now -0.9 % and -2.7 %).
TEST(Planner, EstimateChainsTheHostsSyncsOverTheStage) {
  const std::string yaml =
      "model: {name: m, num_layers: 8, hidden_size: 4096, num_attention_heads: 32, num_query_groups: 8,"
      " ffn_hidden_size: 14336, activation: swiglu, normalization: rmsnorm, add_bias_linear: false, vocab_size: 32000,"
      " seq_length: 4096, moe: {num_experts: 8, topk: 2, ffn_hidden_size: 14336}}\n"
      "parallelism: {tensor: 2, context: 2, expert: 2, sequence_parallel: true}\n"
      "training: {micro_batch_size: 1, global_batch_size: 64, precision: bf16}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 16, gpus_per_node: 8}\nsimulation: {calibration_store: none}\n";
  spec::JobSpec base = test::job_from_yaml(yaml);
  spec::validate(stepsim::catalog::shipped().gpus, base);
  const CostModels models = cost_models(base);
  const auto& compute = models.compute;
  const auto& comm = models.comm;
  for (const plan::Plan& p : {plan::Plan{2, 1, 4, 2, 2, 1, 1, spec::Recompute::None, true, true, false},
                              plan::Plan{2, 2, 2, 2, 2, 1, 1, spec::Recompute::None, true, true, false},
                              plan::Plan{2, 4, 1, 2, 2, 1, 2, spec::Recompute::None, true, true, false},
                              plan::Plan{2, 2, 2, 2, 2, 1, 1, spec::Recompute::Full, true, true, false}}) {
    spec::JobSpec j = plan::job_for(base, p, 16, 64);
    spec::validate(stepsim::catalog::shipped().gpus, j);
    const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(p), *compute, *comm);
    EXPECT_TRUE(lc.host_syncs);
    const plan::Estimate e = plan::estimate_plan(j, lc, *compute, *comm);
    const report::Summary engine = report::summarize(sim::run_simulation(stepsim::catalog::shipped(), j, {0}), 0);
    if (p.recompute == spec::Recompute::None) {  // host-bound (under full recompute less so)
      EXPECT_GT(engine.breakdown.host_gap_s, 0.1 * engine.step_time_s) << plan::describe(p);
    }
    EXPECT_NEAR(e.step_time_s / engine.step_time_s, 1.0, 0.03)
        << plan::describe(p) << ": estimate " << e.step_time_s << " s, engine " << engine.step_time_s << " s";
  }
}

// ZeRO-2 on an MoE model (host syncs every layer) whose data-parallel stream is busy from the first backward to the
// end of the step: Mixtral 8x7B at TP 8 x PP 8 x VP 2 with expert tensor parallel 1 keeps all 8 experts of its layers
// on every rank and reduce-scatters their gradients over the 8-rank expert-DP group after every backward, 11 ms of
// stream per 3 ms backward. The step is then the stream's first reduce-scatter plus its work, a bound the estimate
// takes from its replay (ZeroReplay::stream_s). The pipeline's passes plus the stream's tail after the last backward
// alone, as before, left out the backlog the stream carries through the pipeline's cool-down: -3.3 % at every batch
// (one of the sampled plans of bench_plan_accuracy); now within 1 %.
TEST(Planner, ZeroStreamBoundsAnMoeStepItsBackwardsCannotHide) {
  spec::JobSpec base = spec::load_job_file(stepsim::catalog::shipped().gpus, test::source_dir() + "/examples/mixtral-8x7b-ep8.yaml");
  base.simulation.calibration_store = "none";
  spec::validate(stepsim::catalog::shipped().gpus, base);
  const CostModels models = cost_models(base);
  for (const int64_t gbs : {64, 32}) {
    plan::Plan p{8, 8, 1, 1, 1, 1, 2, spec::Recompute::Selective, true, false, false};
    p.zero_stage = 2;
    p.expert_tensor = 1;
    p.tp_comm_overlap = true;
    spec::JobSpec j = plan::job_for(base, p, 64, gbs);
    spec::validate(stepsim::catalog::shipped().gpus, j);
    const auto [lc, e, engine] = estimate_and_engine(base, j, p, models);
    EXPECT_TRUE(lc.host_syncs);
    // (A fifth of the step and more: the kernels beside the stream are slowed by it, so it is less exposed.)
    EXPECT_GT(engine.breakdown.exposed_comm_s[report::kDp], 0.2 * engine.step_time_s) << "the stream binds";
    EXPECT_NEAR(e.step_time_s / engine.step_time_s, 1.0, 0.01)
        << plan::describe(p) << ", global batch " << gbs << ": estimate " << e.step_time_s << " s, engine "
        << engine.step_time_s << " s";
  }
}

// Megatron-Core's combined 1F1B EP overlap, a searched layout variant (ep1f1b): a second probe replays one combined pair and the
// estimate charges the steady state's pairs only the EP time the pair leaves exposed (the warm-up forwards and
// cool-down backwards keep their own), within 5 % of the engine without pipelining and
// within 10 % with PP 2 x VP 2, on a network where the all-to-alls matter (EP 16 or 8 across nodes of 4 at 100 Gb/s
// per GPU).
TEST(Planner, EstimateFollowsTheEngineUnderEpOverlap) {
  const std::string yaml =
      "model: {name: m, num_layers: 4, hidden_size: 2048, num_attention_heads: 16, ffn_hidden_size: 8192,"
      " activation: swiglu, normalization: rmsnorm, add_bias_linear: false, vocab_size: 32000, seq_length: 4096,"
      " moe: {num_experts: 16, topk: 4, ffn_hidden_size: 1024, shared_expert_ffn_hidden_size: 1024}}\n"
      "parallelism: {expert: 16}\n"
      "training: {micro_batch_size: 1, global_batch_size: 64, precision: bf16, distributed_optimizer: true}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 16, gpus_per_node: 4, inter_node: {bandwidth_Gbps: 100, latency_us: 5}}\n"
      "simulation: {host_time_scale: 0}\n";  // the EP overlap under test, not the host (Planner.HostBound...)
  spec::JobSpec base = test::job_from_yaml(yaml);
  spec::validate(stepsim::catalog::shipped().gpus, base);
  const CostModels models = cost_models(base);
  const auto& compute = models.compute;
  const auto& comm = models.comm;
  plan::Plan zero2{1, 1, 16, 1, 16, 1, 1, spec::Recompute::None, true, false, false};
  zero2.zero_stage = 2;  // the data-parallel stream replay sees the shorter paired passes too
  for (plan::Plan p : {plan::Plan{1, 1, 16, 1, 16, 1, 1, spec::Recompute::None, true, false, false},
                       plan::Plan{1, 2, 8, 1, 8, 1, 2, spec::Recompute::None, true, false, false}, zero2}) {
    auto estimate_of = [&](const plan::Plan& x) {
      spec::JobSpec j = plan::job_for(base, x, 16, 64);
      spec::validate(stepsim::catalog::shipped().gpus, j);
      const plan::LayerCosts lc = plan::probe_layer_costs(stepsim::catalog::shipped(), base, plan::probe_key(x), *compute, *comm);
      EXPECT_EQ(lc.paired_ep_s.size(), x.ep_overlap ? 4u : 0u);
      return plan::estimate_plan(j, lc, *compute, *comm).step_time_s;
    };
    const double serial_estimate = estimate_of(p), serial_engine = engine_step(base, p, 16, 64);
    p.ep_overlap = true;
    EXPECT_EQ(plan::layout_label(p), "ep1f1b");
    const double estimate = estimate_of(p), engine = engine_step(base, p, 16, 64);
    EXPECT_LT(engine, serial_engine * 0.95) << "the overlap must save something here";
    EXPECT_LT(estimate, serial_estimate * 0.95) << "and the estimate must see it";
    // With pipelining the combined step sends its forward's output only after the whole pair, which delays the next
    // stage a little; the estimate does not model that (the engine-timed rows do): ~8 % here.
    const double tolerance = p.pipeline == 1 ? 0.05 : 0.10;
    EXPECT_NEAR(estimate / engine, 1.0, tolerance) << plan::describe(p) << ": estimate " << estimate << " engine " << engine;
  }
}

// A plan whose static memory alone (weights, gradients, optimizer shards, CUDA context, NCCL) is over the GPU's is
// dropped before its probe is built (most of an MoE search's candidates; their probes were most of its time). The
// floor is never above what the full estimate allocates, so the search removes exactly the plans it removed when
// every plan was estimated in full: Mixtral 8x7B on 64 H100, every candidate probed and estimated here by hand.
TEST(Planner, PlansOverMemoryOnTheirStaticMemoryAloneNeedNoProbe) {
  spec::JobSpec base = spec::load_job_file(stepsim::catalog::shipped().gpus,
                                           test::source_dir() + "/examples/mixtral-8x7b-ep8.yaml");
  base.simulation.calibration_store = "none";
  spec::validate(stepsim::catalog::shipped().gpus, base);
  plan::PlannerOptions o;
  o.space.gpus = 64;
  o.space.global_batch = 64;
  o.space.micro_batch_sizes = {1};
  o.space.virtual_stages = {1};
  o.space.recomputes = {spec::Recompute::None, spec::Recompute::Full};
  o.simulate = 0;
  o.threads = 2;
  o.top = 1000;
  const plan::PlanResult r = plan::run_planner(stepsim::catalog::shipped(), base, o);

  const plan::PlanSpace space = plan::enumerate_plans(stepsim::catalog::shipped().gpus, base, o.space);
  spec::JobSpec pb = base;
  spec::set_num_gpus(pb.cluster, 64);
  const CostModels models = cost_models(pb);
  std::map<plan::ProbeKey, plan::LayerCosts> probes;
  int64_t over = 0, over_statically = 0;
  for (const plan::Plan& p : space.plans) {
    const spec::JobSpec j = plan::job_for(base, p, 64, 64);
    const int64_t floor = plan::estimate::static_memory_floor(j);
    auto it = probes.find(plan::probe_key(p));
    if (it == probes.end()) {
      it = probes.emplace(plan::probe_key(p), plan::probe_layer_costs(stepsim::catalog::shipped(), pb, plan::probe_key(p),
                                                                      *models.compute, *models.comm)).first;
    }
    const plan::Estimate e = plan::estimate_plan(j, it->second, *models.compute, *models.comm);
    EXPECT_LE(floor, e.allocated_memory_bytes) << plan::describe(p);
    over += e.memory_fit(r.capacity_bytes) == report::MemoryFit::Over ? 1 : 0;
    over_statically += floor > r.capacity_bytes ? 1 : 0;
  }
  EXPECT_GT(over_statically, 0);
  EXPECT_LT(over_statically, over);  // some plans are over only with their activations
  EXPECT_EQ(r.static_oom, over_statically);
  EXPECT_EQ(r.removed[static_cast<int>(plan::Rule::Memory)], over);
  EXPECT_EQ(r.fits, static_cast<int64_t>(space.plans.size()) - over);
}

}  // namespace
}  // namespace stepsim
