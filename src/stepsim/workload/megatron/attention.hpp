#pragma once
// The attention block of a transformer layer: input norm, QKV projection (or MLA's down- and up-projections), the
// attention core (flash, unfused, or context-parallel), the output projection and its bias-dropout-add.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

Ref attention_fwd(Emitter& em, const Context& cx, Ref in);
Ref attention_bwd(Emitter& em, const Context& cx, Ref in);

}  // namespace stepsim::workload::megatron
