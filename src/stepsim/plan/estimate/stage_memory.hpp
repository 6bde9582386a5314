#pragma once
// A stage's peak memory: its static memory (weights, gradients, optimizer shards, CUDA/NCCL overheads, the same
// function `stepsim memory` uses) plus the activations of the micro-batch chunks in flight at the end of the
// warm-up, the probe's working memory, and the caching allocator's reserve over them.
#include <cstdint>
#include <vector>

#include "stepsim/plan/estimate/stage_costs.hpp"
#include "stepsim/workload/rank_layout.hpp"

namespace stepsim::plan::estimate {

struct StageMemoryPeak {
  int64_t bytes = 0;
  int stage = 0;  // the first stage with the peak
  // Over stages, the most PyTorch allocates with the CUDA context and NCCL beside it: the peak less the allocator's
  // reserve and stream pools (what decides out of memory against tight, report/memory_fit.hpp).
  int64_t allocated_bytes = 0;
};

StageMemoryPeak peak_stage_memory(const spec::JobSpec& job, const LayerCosts& lc, const workload::ModelDims& d,
                                  const workload::RankLayout& layout, const std::vector<StageCosts>& st);

// The most any stage allocates before its first activation (weights, gradients, optimizer shards, gathered units,
// CUDA context and NCCL): a floor of StageMemoryPeak::allocated_bytes that needs no probe, so the planner can drop a
// plan over the GPU's memory without building its probe.
int64_t static_memory_floor(const spec::JobSpec& job);

}  // namespace stepsim::plan::estimate
