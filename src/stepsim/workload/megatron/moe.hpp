#pragma once
// The MoE MLP block of a transformer layer: pre-MLP norm, router, dispatch, grouped expert GEMMs, combine, and the
// shared expert, forward and backward (docs/MODEL.md, "Mixture of experts").
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

Ref moe_fwd(Emitter& em, const Context& cx, Ref in);
Ref moe_bwd(Emitter& em, const Context& cx, Ref in);

}  // namespace stepsim::workload::megatron
