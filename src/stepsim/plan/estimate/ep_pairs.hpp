#pragma once
// Combined 1F1B EP overlap (training.overlap_moe_expert_parallel_comm): in the steady state a forward and a backward
// run as one combined pair, one micro-batch's all-to-alls under the other's kernels, so each MoE layer leaves the
// pair's exposed time instead of its two unpaired passes'; the warm-up forwards and cool-down backwards (one more
// warm-up under the overlap) keep theirs. A stage sees the average over its m v passes.
#include <vector>

#include "stepsim/plan/estimate/stage_costs.hpp"

namespace stepsim::plan::estimate {

// Layer l's forward and backward as a stage with `share` of its passes in pairs sees them on average: the pair's
// exposed EP, TP and CP time and its host waits (charged to the forward) instead of the unpaired passes'.
void pair_layer(const LayerCosts& lc, int l, double share, LayerCosts::Part& f, LayerCosts::Part& b);

// Per stage, the share of its passes that run in combined pairs; each stage's exposed times moved to those averages.
std::vector<double> apply_combined_pairs(const spec::JobSpec& job, const LayerCosts& lc, const ChunkLayers& chunks,
                                         std::vector<StageCosts>& st);

}  // namespace stepsim::plan::estimate
