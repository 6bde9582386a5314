#pragma once
// Multi-token prediction depth (Megatron-Core's MultiTokenPredictionLayer, DeepSeek-V3 §2.2): the embedding of the
// shifted tokens, enorm and hnorm, eh_proj (the concatenated 2h -> h, column-parallel: its input gathered, its output
// gathered back over TP), one transformer layer, and its own pass through the shared output layer and cross-entropy.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

Ref mtp_fwd(Emitter& em, const Context& cx, int unit, Ref in);
Ref mtp_bwd(Emitter& em, const Context& cx, int unit, Ref in);

}  // namespace stepsim::workload::megatron
