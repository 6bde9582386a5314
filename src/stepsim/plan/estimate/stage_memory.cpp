#include "stepsim/plan/estimate/stage_memory.hpp"

#include <algorithm>
#include <utility>

#include "stepsim/plan/estimate/chunk_layers.hpp"
#include "stepsim/workload/schedule.hpp"
#include "stepsim/workload/static_memory.hpp"
#include "stepsim/workload/working_memory.hpp"

namespace stepsim::plan::estimate {

namespace {

// Micro-batch chunks whose activations a stage holds at the end of its warm-up (one more under the combined 1F1B EP
// overlap, whose pair starts the next forward before the backward frees).
int chunks_in_flight(const spec::JobSpec& job, int s) {
  const auto& par = job.parallelism;
  const int m = static_cast<int>(job.num_microbatches());
  return workload::warmup_steps(par.schedule, s, par.pipeline, par.virtual_stages, m,
                                job.training.overlap_moe_expert_parallel_comm,
                                workload::all_forwards_first(job.training)) +
         1;
}

// The stage's static memory: what it holds whatever its activations (the allocator's reserve still 0).
workload::StaticMemory stage_static_memory(const spec::JobSpec& job, const workload::ModelDims& d,
                                           const workload::RankLayout& layout, const StageParams& x, int s) {
  const int p = job.parallelism.pipeline;
  const bool first = s == 0, last = s == p - 1;
  const workload::RankParams q{static_cast<int64_t>(x.dense), static_cast<int64_t>(x.expert),
                               d.fp8_exempt_params(first, last, static_cast<int64_t>(x.bf16)),
                               d.root_params(first, last),
                               d.largest_layer_params(job.model.moe.has_value()), d.head_params(last)};
  return workload::static_memory(job, q, layout.group_size(workload::GroupKind::Dp),
                                 layout.group_size(workload::GroupKind::Edp), layout.communicators());
}

// The stage's peak and, of it, what is allocated with the CUDA context and NCCL (the peak less the reserve).
std::pair<int64_t, int64_t> stage_memory_bytes(const spec::JobSpec& job, const LayerCosts& lc,
                                               const workload::ModelDims& d, const workload::RankLayout& layout,
                                               const StageCosts& x, int s) {
  workload::StaticMemory sm = stage_static_memory(job, d, layout, StageParams{x.dense, x.expert, x.bf16}, s);
  const double act = static_cast<double>(chunks_in_flight(job, s)) * x.stored / job.parallelism.virtual_stages +
                     lc.transient_bytes;
  sm.allocator_reserve = workload::allocator_reserve_bytes(job, act);
  const int64_t peak = sm.total() + static_cast<int64_t>(act);
  return {peak, peak - sm.reserved_extra()};
}

}  // namespace

StageMemoryPeak peak_stage_memory(const spec::JobSpec& job, const LayerCosts& lc, const workload::ModelDims& d,
                                  const workload::RankLayout& layout, const std::vector<StageCosts>& st) {
  StageMemoryPeak peak;
  for (int s = 0; s < static_cast<int>(st.size()); ++s) {
    const auto [total, allocated] = stage_memory_bytes(job, lc, d, layout, st[s], s);
    if (total > peak.bytes) peak.bytes = total, peak.stage = s;
    peak.allocated_bytes = std::max(peak.allocated_bytes, allocated);
  }
  return peak;
}

int64_t static_memory_floor(const spec::JobSpec& job) {
  const workload::ModelDims d = workload::make_dims(job);
  const workload::RankLayout layout = workload::job_rank_layout(job);
  const std::vector<StageParams> params = stage_params(job, d, chunk_layers(job));
  int64_t floor = 0;
  for (int s = 0; s < static_cast<int>(params.size()); ++s) {
    const workload::StaticMemory sm = stage_static_memory(job, d, layout, params[s], s);
    floor = std::max(floor, sm.allocated() + sm.overhead);
  }
  return floor;
}

}  // namespace stepsim::plan::estimate
