#pragma once
// ZeRO-2/3: the units a stage's data-parallel stream works through (zero_stream.hpp), per local model chunk: each
// unit's compute and host issue time from the probe, the parameter all-gather before it (stage 3) and the gradient
// reduce-scatter after its backward (stages 2 and 3).
#include <vector>

#include "stepsim/plan/estimate/dp_collectives.hpp"
#include "stepsim/plan/estimate/zero_stream.hpp"

namespace stepsim::plan::estimate {

// A stage's units per local model chunk, in forward order and in backward order: embedding (first chunk), the
// layers, the head (last chunk).
struct StageUnits {
  std::vector<ZeroUnits> fwd, bwd;
};

// Per stage; `paired_share`: per stage, the share of its passes in combined 1F1B EP pairs (ep_pairs.hpp).
std::vector<StageUnits> zero_stage_units(const DpStep& step, const std::vector<double>& paired_share);

}  // namespace stepsim::plan::estimate
