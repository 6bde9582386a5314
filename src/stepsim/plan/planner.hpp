#pragma once
// The plan search (stepsim plan, docs/PLANNER.md): walk the space with its pruning rules, estimate every
// survivor with the analytic path, drop those whose estimated peak memory exceeds the GPU, re-time the best
// with the engine and rank. Work is split over threads (or MPI ranks) by candidate index and gathered in
// index order, so the result does not depend on how many workers ran.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/plan/plan_estimate.hpp"
#include "stepsim/plan/plan_space.hpp"
#include "stepsim/plan/plan_ties.hpp"
#include "stepsim/plan/reliability.hpp"
#include "stepsim/report/memory_fit.hpp"
#include "stepsim/io/progress.hpp"

namespace stepsim::plan {

enum class Objective { Step, E2E };

// 5 % of capacity (4 GiB on an 80 GiB GPU). Assumed, not measured: the working buffers and the caching allocator's
// reserve are in the memory model (docs/MODEL.md §9), measured on one machine's short loops; NCCL's own buffers and
// longer runs' allocator behaviour are not (§13).
inline constexpr double kDefaultMemoryMargin = 0.05;

// MoFa eq. 43 inputs that are not in the job (same defaults as `stepsim reliability`).
struct E2EOptions {
  int64_t steps = 0;
  double failures_per_node_day = kDefaultFailuresPerNodeDay;
  double storage_GBps = kDefaultStorageGBps;
  double init_time_s = 0;
};

struct PlannerOptions {
  SpaceOptions space;
  int top = 10;       // plans reported
  int simulate = 2;   // best estimates re-timed by the engine (each 405B-on-8192 run costs ~20 s of a core)
  int threads = 0;    // 0 = std::thread::hardware_concurrency()
  Objective objective = Objective::Step;
  E2EOptions e2e;
  double price_per_gpu_hour = 0;  // > 0 adds cost columns
  // Fraction of the GPU's memory kept free for what the memory model does not count (NCCL's buffers beyond the
  // per-communicator constant, the allocator over long runs): a plan whose peak is above capacity x (1 - margin) is "at risk" and ranked
  // after every plan below it. 0 ranks by the objective alone.
  double memory_margin = kDefaultMemoryMargin;
  // Plans within this fraction of their tie group's first are ordered by the secondary rule (plan_ties.hpp); 0 ranks
  // by the objective alone.
  double tie_tolerance = kDefaultTieTolerance;
  ProgressFn progress;  // "probing layer costs", "estimating plans", then "simulating the best plans" (this process's
                        // share under MPI)
};

struct RankedPlan {
  Plan plan;
  Estimate estimate;        // the analytic path's numbers
  bool simulated = false;   // step_time_s .. stages come from the engine
  double step_time_s = 0, tflops_per_gpu = 0;
  int64_t peak_memory_bytes = 0;
  // Out of memory, tight or fits (report/memory_fit.hpp). The planner removes plans out of memory and ranks tight
  // ones at risk; the job as written is shown whatever it is.
  report::MemoryFit memory_fit = report::MemoryFit::Fits;
  bool memory_at_risk = false;  // fits, but its peak is within PlannerOptions::memory_margin of capacity or over it
  // Engine-timed MoE plans whose layers are host-bound: the step with the measured eager host time as the floor
  // (sim/moe_host_note.hpp); 0 = not host-bound or not engine-timed. Flagged, not ranked by: step_time_s stays the
  // GPU-bound time every plan is ranked by.
  double host_bound_step_time_s = 0;
  StageTimes stages;
  // Objective e2e: MoFa eq. 44's interval and eq. 43's time; cost when a price is given.
  int64_t checkpoint_interval = 0;
  double e2e_time_s = 0, ettr = 0, cost_usd = 0;
  double objective_s = 0;  // what the ranking sorts by
  int tie_group = 0;       // plans the model cannot tell apart share one (from 1; plan_ties.hpp)
};

struct PlanResult {
  std::vector<RankedPlan> plans;           // best first, at most top
  std::array<int64_t, kNumRules> removed{};
  int64_t enumerated = 0, estimated = 0, fits = 0;
  int64_t static_oom = 0;  // removed by the memory rule on their static memory alone (no probe built)
  int64_t simulated = 0, engine_oom = 0;  // engine runs; of which the engine found over capacity
  int64_t at_risk = 0;                    // fitting plans (estimated) within the memory margin
  int64_t tight = 0;                      // of those, the tight ones (allocations fit, the reserved peak does not)
  int64_t capacity_bytes = 0;
  int nodes = 0;
  double tie_tolerance = 0;      // as the search used it
  double checkpoint_save_s = 0;  // e2e only
  // The job as written on the planned GPUs and batch, timed as the best plans are; absent (with the reason in
  // baseline_note) when its layout does not run there.
  std::optional<RankedPlan> baseline;
  std::string baseline_note;
  std::vector<std::string> notes;
};

// Runs fn(i, worker) for i in [0, count) on `threads` threads (worker in [0, threads)); callers store
// results by index, so the outcome does not depend on the thread count.
void parallel_for(int64_t count, int threads, const std::function<void(int64_t, int)>& fn);

// Several processes sharing one search (MPI): process `rank` of `size` estimates and simulates the candidates
// whose index % size == rank; allgather returns every process's bytes in rank order. size 1 needs no allgather.
struct Distribution {
  int rank = 0, size = 1;
  std::function<std::vector<std::vector<char>>(const std::vector<char>& mine)> allgather;
};

PlanResult run_planner(const catalog::Catalog& cat, const spec::JobSpec& base, const PlannerOptions& o,
                       const Distribution& dist = {});

// `--fp8-recipes`: a comma-separated list of delayed | current | blockwise | mxfp8, or "all" (the recipes the job's GPU
// runs: mxfp8 on Blackwell only). Throws InputError naming the flag.
std::vector<spec::Fp8Recipe> parse_fp8_recipes(const hw::GpuCatalog& gpus, const std::string& list,
                                               const spec::JobSpec& job);

}  // namespace stepsim::plan
