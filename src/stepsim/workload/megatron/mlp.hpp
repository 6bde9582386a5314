#pragma once
// The dense MLP block of a transformer layer: pre-MLP norm, fc1 (column-parallel), activation, fc2 (row-parallel) and
// its bias-dropout-add.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

Ref mlp_fwd(Emitter& em, const Context& cx, Ref in);
Ref mlp_bwd(Emitter& em, const Context& cx, Ref in);

}  // namespace stepsim::workload::megatron
