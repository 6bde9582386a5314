#pragma once
// The memory-bound kernels around every block of a layer: its norm (LayerNorm / RMSNorm, before attention, before the
// MLP, and the final one) and its fused bias-dropout-add into the residual stream. Each reads and writes the
// sequence-sharded hidden states (β T_sp h per tensor); the bytes per element are the framework's
// (FrameworkProfile::kernels).
#include <vector>

#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

// Where a norm runs: inside a transformer layer, or after the last one (the final norm, which a framework compiling
// per block leaves eager: FrameworkProfile::head_kernels).
enum class NormSite { Layer, Final };
// Reads the input, writes the output; stores the output for the next GEMM's weight gradient.
Ref norm_fwd(Emitter& em, const Context& cx, const char* name, Ref in, NormSite site = NormSite::Layer);
// Reads the output gradient, the input and writes the input gradient.
Ref norm_bwd(Emitter& em, const Context& cx, const char* name, Ref in, NormSite site = NormSite::Layer);
// Reads the block's output and the residual, writes the sum (and its dropout mask, stored when hidden_dropout > 0).
Ref bias_dropout_add_fwd(Emitter& em, const Context& cx, const char* name, std::vector<Ref> deps);
Ref bias_dropout_add_bwd(Emitter& em, const Context& cx, const char* name, Ref in);

}  // namespace stepsim::workload::megatron
