#pragma once
// A warning the summary prints for MoE steps whose layers give the GPU less work per forward than an eager
// Megatron-Core MoE layer needs of the host (docs/COST-MODELS.md, "Host-bound MoE layers"). The engine does not model
// the host's issue rate (measured, not yet modelled: the host time on a DGX host with Transformer Engine is not
// known), so such a step is likely slower than predicted; the note says so with the two numbers, and nothing changes
// the predicted step.
#include <optional>
#include <string>

#include "stepsim/workload/program.hpp"

namespace stepsim::sim {

// Host time of one Megatron-Core MoE layer forward in eager PyTorch, measured on an H100 host: one EP-8 rank's share
// of Qwen3-30B-A3B with grouped experts at 256 tokens, where the kernels take almost nothing, so the wall time is the
// host's (data/measurements/h100-sxm/megatron_host.csv, qwen3-30b-a3b-ep8-grouped-tiny: 23,214 us for 4 layers).
inline constexpr double kMoeLayerForwardHostUs = 23214.0 / 4;

// The note for a timed workload (compute durations filled in), or nothing: no dropless MoE layer (only those
// synchronise the host with the GPU each forward), CUDA graphs (no eager issue), or GPU work per MoE layer forward
// above the host's.
std::optional<std::string> host_bound_moe_note(const workload::Workload& w);

}  // namespace stepsim::sim
