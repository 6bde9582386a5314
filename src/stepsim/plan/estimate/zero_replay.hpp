#pragma once
// ZeRO-2/3: each stage's passes replayed against its data-parallel stream (zero_stream.hpp) over the whole step, in
// Megatron's schedule order, with the pipeline's waits of the other stages between the passes: the stream runs on in
// them, so a deep pipeline hides gathers and drains reduce-scatters there.
#include <vector>

#include "stepsim/plan/estimate/dp_collectives.hpp"

namespace stepsim::plan::estimate {

// Fills each stage's `zero` and `zero_wait`. `paired_share`: per stage, the share of its passes in combined 1F1B EP
// pairs (ep_pairs.hpp; unused without the overlap).
void replay_zero_streams(const DpStep& step, const std::vector<double>& paired_share, std::vector<StageCosts>& st);

}  // namespace stepsim::plan::estimate
