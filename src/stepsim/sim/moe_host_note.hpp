#pragma once
// Host-bound MoE layers (docs/COST-MODELS.md, "Host-bound MoE layers"): MoE steps whose layers give the GPU less work
// per forward than an eager Megatron-Core MoE layer needs of the host. The engine does not model the host's issue
// rate (measured, not yet modelled: the host time on a DGX host with Transformer Engine is not known), so the point
// prediction stays GPU-bound; the summary says so in a note and widens the prediction interval's upper end to the step
// with the measured host time as the floor (`host_bound_moe`), since no calibration run was host-bound.
#include <optional>
#include <string>

#include "stepsim/workload/program.hpp"

namespace stepsim::sim {

// Host time of one Megatron-Core MoE layer forward in eager PyTorch, measured on an H100 host: one EP-8 rank's share
// of Qwen3-30B-A3B with grouped experts at 256 tokens, where the kernels take almost nothing, so the wall time is the
// host's (data/measurements/h100-sxm/megatron_host.csv, qwen3-30b-a3b-ep8-grouped-tiny: 23,214 us for 4 layers).
inline constexpr double kMoeLayerForwardHostUs = 23214.0 / 4;
// The same layers' backward: forward+backward 43,331.1 us minus the forward's 23,214 us, over 4 layers.
inline constexpr double kMoeLayerBackwardHostUs = (43331.1 - 23214.0) / 4;

struct HostBoundMoe {
  double gpu_us_per_layer_forward = 0;  // least GPU work of a stage's MoE layer forward per micro-batch, us
  // What the step would gain with the host as the floor: per pipeline stage, summed over its micro-batches, each MoE
  // layer's forward waits max(0, H_f - its forward GPU work) (the dispatcher's synchronisation empties the queue every
  // forward) and each model chunk's backward max(0, sum of H_b - its backward and recompute GPU work) (no
  // synchronisation: the host's lead carries across the chunk's layers; a recomputed layer costs the host H_f more);
  // the stage that gains most. Seconds.
  double extra_s = 0;
};

// For a timed workload (compute durations filled in): nothing when there is no dropless MoE layer (only those
// synchronise the host with the GPU each forward), under CUDA graphs (no eager issue), or when every stage's MoE
// layer forward has more GPU work than the host's.
std::optional<HostBoundMoe> host_bound_moe(const workload::Workload& w);

// The summary's note for it, with both numbers.
std::string host_bound_moe_note(const HostBoundMoe& h);
std::optional<std::string> host_bound_moe_note(const workload::Workload& w);

}  // namespace stepsim::sim
