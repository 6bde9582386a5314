#pragma once
// Host issue model: eager PyTorch issues a rank's ops one after another from one Python thread, so the GPU cannot start
// an op before the host has issued it, and the host stops at a synchronisation (the dropless MoE dispatcher's
// tokens-per-expert copy to the host) until the GPU has caught up. A layer whose kernels take less time than the host
// needs to issue them leaves the GPU idle (docs/COST-MODELS.md, "Host issue model").
//
// The host times are measured per whole Megatron-Core layer (data/measurements/h100-sxm/megatron_host.csv: eager, at
// 256 tokens where the kernels take almost nothing, so the wall time is the host's), spread evenly over the ops the
// workload builder emits for that layer and pass; `scale` is the host's speed relative to the measuring machine's
// (a 2.1 GHz virtual Xeon without Transformer Engine), fitted per architecture in data/efficiency.yaml.
#include "stepsim/workload/program.hpp"

namespace stepsim::cost {

// Per layer and micro-batch, us, megatron_host.csv (second run): qwen3-30b-a3b-ep8-grouped-tiny (4 layers) forward
// 23,214 us, forward+backward 43,331.1 us; llama3-8b-dense-tiny forward 14,744.6 us, forward+backward 25,826.9 us.
inline constexpr double kHostMoeLayerForwardUs = 23214.0 / 4;
inline constexpr double kHostMoeLayerBackwardUs = (43331.1 - 23214.0) / 4;
inline constexpr double kHostDenseLayerForwardUs = 14744.6 / 4;
inline constexpr double kHostDenseLayerBackwardUs = (25826.9 - 14744.6) / 4;
// An op outside the transformer layers (embedding, output layer, loss, optimizer, gradient reduction): one eager
// tiny op's host time on the same machine (misc.json: 10 us).
inline constexpr double kHostOtherOpUs = 10.0;

// Fills Op::host_ns, Program::host_prefix and Program::host_syncs (the ops the builder marked Op::host_sync) of every
// program at host speed
// `scale` (> 0), and zeroes the duration of the sync ops (the stall they stood for is now the host's issue time).
// scale <= 0 clears the model (every op issued at once, the engine's behaviour without it).
void assign_host_issue(workload::Workload& w, double scale);

}  // namespace stepsim::cost
