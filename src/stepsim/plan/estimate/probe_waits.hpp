#pragma once
// Where the probe charges the time its compute stream stood idle before a kernel: to the kind of communication the
// kernel waited for (the replay's blocker, sim/stream_replay.hpp), to the host's issue, or to an exposed host copy.
// Communication that ran beside compute left no idle time and costs nothing, as in the engine.
#include <vector>

#include "stepsim/plan/plan_estimate.hpp"
#include "stepsim/sim/stream_replay.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::plan::estimate {

// A compute op's idle time before it, charged to what it waited for (the host, the EP stream, a TP or CP collective,
// and with `host_copies` a host copy as compute). The probe's data-parallel and pipeline waits are not charged: those
// are planned per stage.
void charge_compute_wait(LayerCosts::Part& part, const workload::Program& prog, int blocker, double idle,
                         bool host_copies = true);

// Combined 1F1B EP overlap: the probe's job runs two micro-batches (forward 0 alone, forward 1 with backward 0,
// backward 1 alone); whether `op` belongs to the combined pair between them.
bool in_combined_pair(const workload::Op& op);

// The pair's exposed time per layer by what the compute stream waited for: the EP stream (its all-to-alls and the
// combine node's computation), the TP and CP collectives (in the pair one micro-batch's collectives can run while the
// other's kernels do) and the host. Charged to the layer of the op that waited.
std::vector<LayerCosts::Part> paired_exposure(const workload::Program& prog, const sim::StreamReplay& rp, int layers);

}  // namespace stepsim::plan::estimate
