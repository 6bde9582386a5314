#pragma once
// The pipeline's terms of a step: the slowest stage paces m micro-batches; the fill and drain add the other stages'
// passes, 1 / v of a micro-batch each; and the sends between stages, each stage boundary's exchange at its own link's
// rate (consecutive stages on one node or across nodes, Megatron's rank order).
#include <cstdint>
#include <vector>

#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/plan/estimate/stage_costs.hpp"
#include "stepsim/workload/rank_layout.hpp"
#include "stepsim/workload/static_memory.hpp"

namespace stepsim::plan::estimate {

struct PipelineTerms {
  int slow = 0;           // the slowest stage (the first of equals)
  double bubble_s = 0;    // the fill and drain
  double pipe_s = 0;      // m passes of the slowest stage plus the bubble
  double sends_s = 0;     // the exchanges between stages the passes do not hide
};

// One micro-batch's activation as a stage hands it to the next (b s/c h / t under sequence parallelism).
uint64_t boundary_activation_bytes(const workload::BytesPerParam& bpp, const workload::ModelDims& d);

// `activation_bytes`: one micro-batch's activation as a stage hands it on.
PipelineTerms pipeline_terms(const std::vector<StageCosts>& st, int virtual_stages, int64_t microbatches,
                             const workload::RankLayout& layout, const cost::CollectiveModel& comm,
                             uint64_t activation_bytes);

}  // namespace stepsim::plan::estimate
