#pragma once
// Host-bound MoE layers (docs/COST-MODELS.md, "Host issue model"): MoE steps whose layers give the GPU less work per
// forward than an eager Megatron-Core MoE layer needs of the host. The engine times them with the host issue model at
// the job's host speed (cost/host_issue.hpp); the summary says so in a note, and since that speed is one fitted number
// and no calibration run was a host-bound MoE step, the prediction interval's upper end reaches the step with the
// measuring machine's host (speed 1).
#include <optional>
#include <string>

#include "stepsim/cost/compute/host_issue.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::sim {

// For the tests and the note: the measured eager host time of one MoE layer forward and backward (cost/host_issue.hpp).
inline constexpr double kMoeLayerForwardHostUs = cost::kHostMoeLayerForwardUs;
inline constexpr double kMoeLayerBackwardHostUs = cost::kHostMoeLayerBackwardUs;

struct HostBoundMoe {
  double gpu_us_per_layer_forward = 0;  // least GPU work of a stage's MoE layer forward per micro-batch, us
  double host_time_scale = 0;           // the host speed the step was timed at (0 = host not modelled)
  // How much longer the step would take with the measuring machine's host than at host_time_scale, by the closed form
  // below (wait(1) - wait(scale)), seconds. wait(s): per pipeline stage, summed over its micro-batches, each MoE layer's
  // forward waits max(0, s H_f - its forward GPU work) (the dispatcher's synchronisation empties the queue every
  // forward) and each model chunk's backward max(0, s (n H_b + r H_f) - its backward and recompute GPU work) for its n
  // MoE layers of which r are recomputed (no synchronisation: the host's lead carries across the chunk's layers); the
  // stage that waits most.
  double extra_s = 0;
};

// For a timed workload (compute durations filled in) timed at host speed `scale`: nothing when there is no dropless MoE
// layer (only those synchronise the host with the GPU each forward), under CUDA graphs (no eager issue), or when every
// stage's MoE layer forward has more GPU work than the measured host time.
std::optional<HostBoundMoe> host_bound_moe(const workload::Workload& w, double scale);

// The closed form's wait(s) of the busiest stage, seconds (exposed for the tests).
double host_bound_moe_wait_s(const workload::Workload& w, double scale);

// The summary's note for it, with the numbers.
std::string host_bound_moe_note(const HostBoundMoe& h);

}  // namespace stepsim::sim
