#pragma once
// One transformer layer, forward and backward: the attention block, then the dense or MoE MLP block, with full
// recompute (the layer's checkpoint stored, the layer re-run before its backward) and the layer's working buffers.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

Ref layer_fwd(Emitter& em, const Context& cx, int layer, Ref in);
Ref layer_bwd(Emitter& em, const Context& cx, int layer, Ref in);

}  // namespace stepsim::workload::megatron
