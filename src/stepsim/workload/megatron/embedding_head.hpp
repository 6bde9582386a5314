#pragma once
// The model's ends: the vocab-parallel word embedding (and its dropout), and the output head (final norm, output
// layer, vocab-parallel cross-entropy, fused by Transformer Engine or not); multi-token prediction depths (mtp.hpp)
// reuse both.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

Ref embedding_fwd(Emitter& em, const Context& cx, Ref in);
Ref embedding_bwd(Emitter& em, const Context& cx, Ref in);
Ref head_fwd(Emitter& em, const Context& cx, Ref in);
Ref head_bwd(Emitter& em, const Context& cx, Ref in);

}  // namespace stepsim::workload::megatron
