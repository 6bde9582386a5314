#pragma once
// The dense MLP block of a transformer layer: pre-MLP norm, fc1 (column-parallel), activation, fc2 (row-parallel) and
// its bias-dropout-add.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

Ref mlp_fwd(Emitter& em, const Context& cx, Ref in);
// The activation (SwiGLU / GeLU) between fc1 and fc2, as the framework's kernels run it; stores `saved` bytes.
Ref activation_fwd(Emitter& em, const Context& cx, Ref in, int64_t saved);
Ref activation_bwd(Emitter& em, const Context& cx);
Ref mlp_bwd(Emitter& em, const Context& cx, Ref in);

}  // namespace stepsim::workload::megatron
