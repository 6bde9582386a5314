#pragma once
// The planner's fast analytic path: a step time and a peak memory for a plan without running the engine.
// Per-layer costs of one micro-batch come from a probe: the real Megatron workload of the model on one
// pipeline stage and one micro-batch under the plan's (TP, CP, EP, micro-batch, recompute), timed op by op
// with the same compute and collective models as the engine. Plans that differ only in PP, DP, VP or the
// optimizer switches share a probe. The probe's layers are then placed on stages and combined with the 1F1B
// bubble, the pipeline sends and the DP/optimizer tail (formula in docs/PLANNER.md).
#include <compare>
#include <cstdint>
#include <memory>
#include <vector>

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/cost/overlap/overlap_model.hpp"
#include "stepsim/plan/plan_space.hpp"
#include "stepsim/job/job_spec.hpp"
#include "stepsim/report/memory_fit.hpp"

namespace stepsim::plan {

// What a probe depends on.
struct ProbeKey {
  int tensor = 1, context = 1, expert = 1, micro_batch_size = 1;
  spec::Recompute recompute = spec::Recompute::None;
  bool tp_comm_overlap = false;
  spec::CpCommType cp_comm_type = spec::CpCommType::P2P;
  int expert_tensor = 0;
  int fp8_recipe = -1;
  bool ep_overlap = false;
  int cp_a2a = 0;  // Plan::cp_a2a
  auto operator<=>(const ProbeKey&) const = default;
};
ProbeKey probe_key(const Plan& p);

// One micro-batch on one rank, per global layer and for the embedding ("first") and head + loss ("last").
struct LayerCosts {
  struct Part {
    double compute_s = 0;              // kernels (forward, or backward + recompute)
    double tp_s = 0, cp_s = 0, ep_s = 0; // communication the compute waits for (CP: beyond the local attention)
    double host_s = 0;                 // the compute stream waiting for the host to issue (host issue model)
    double issue_s = 0;                // the host's time to issue the part's ops (not part of the GPU's total)
    // The part's ops up to its first host sync (all of them when it has none): their issue time and GPU time
    // (kernels and communication waits, not host waits). Forward parts of MoE layers split here.
    double pre_issue_s = 0, pre_gpu_s = 0;
    bool syncs = false;  // the part holds a host sync
    double total() const { return compute_s + tp_s + cp_s + ep_s + host_s; }
    double gpu() const { return total() - host_s; }
  };
  // The probe's host stops at a sync every MoE layer forward (the dispatcher's tokens-per-expert copy), so its lead
  // is lost there and the waits it leaves are per layer (host_s above). Without syncs the host runs ahead across
  // micro-batches and pipeline waits, and is a bound on the whole step instead (estimate_plan).
  bool host_syncs = false;
  double sync_wait_s = 0;  // per sync, the GPU's waits for the host that a fluid flow shop misses (estimate_plan)
  std::vector<Part> fwd, bwd;  // per layer
  // Combined 1F1B EP overlap (training.overlap_moe_expert_parallel_comm): per layer, the EP time a steady-state
  // combined pair of a forward and a backward leaves exposed (the compute stream waiting for the EP stream), from a
  // replay of the probe's job with two micro-batches (docs/MODEL.md §12a). Empty without the overlap.
  std::vector<double> paired_ep_s;
  // The same pair's exposed TP (expert TP included) and CP time, and its waits for the host (which issues both
  // micro-batches' ops of the pair).
  std::vector<double> paired_tp_s, paired_cp_s, paired_host_s;
  Part first_fwd, first_bwd, last_fwd, last_bwd;
  std::vector<double> stored_bytes;  // activations a micro-batch leaves stored per layer until its backward
  double first_stored = 0, last_stored = 0;
  double transient_bytes = 0;        // working memory above the stored activations (probe's peak minus them)
  // The job's overlap model (simulation.overlap_model; null for none): it slowed the probe's kernels beside its
  // collectives, and slows a plan's passes beside its data-parallel stream (estimate::DpStep::slowdown).
  std::shared_ptr<const cost::OverlapModel> overlap;
  double forward_flops = 0;          // whole model, one micro-batch, one rank of a stage (for TFLOP/s)
  std::vector<double> layer_forward_flops;  // its decoder layers' share, per layer
};

// Builds and times the probe for `key` (base: a validated job). `reduce`: an MoE model's probe builds its dense layers
// and a few periods of its MoE pattern and copies the rest (probe.cpp says which); false builds every layer (for tests
// and bench/bench_probe_reduction).
LayerCosts probe_layer_costs(const catalog::Catalog& cat, const spec::JobSpec& base, const ProbeKey& key,
                             const cost::ComputeModel& compute, const cost::CollectiveModel& comm, bool reduce = true);

// Times of MoFa Table 6 for the slowest stage: compute, TP (CP, EP) communication, pipeline (bubble + sends),
// exposed DP communication and the optimizer update.
struct StageTimes {
  double compute_s = 0, tp_s = 0, cp_s = 0, ep_s = 0, pp_s = 0, dp_s = 0, update_s = 0;
  double host_s = 0;  // GPU waiting for the host to issue (host issue model)
};

struct Estimate {
  double step_time_s = 0;
  double tflops_per_gpu = 0;
  int64_t peak_memory_bytes = 0;  // max over stages: static + activations
  int peak_stage = 0;
  int64_t allocated_memory_bytes = 0;  // max over stages: allocated + CUDA context + NCCL (StageMemoryPeak)
  StageTimes stages;
  // Out of memory on the stages' static memory alone (estimate::static_memory_floor): no probe, no times, and both
  // memory figures are the floor.
  bool static_oom = false;
  // Out of memory, tight or fits on a GPU of `capacity_bytes` (report/memory_fit.hpp).
  report::MemoryFit memory_fit(int64_t capacity_bytes) const {
    return report::memory_fit(allocated_memory_bytes, 0, peak_memory_bytes, capacity_bytes);
  }
};

// job: the plan's job (job_for + validate); costs: its probe.
Estimate estimate_plan(const spec::JobSpec& job, const LayerCosts& costs, const cost::ComputeModel& compute,
                       const cost::CollectiveModel& comm);

}  // namespace stepsim::plan
