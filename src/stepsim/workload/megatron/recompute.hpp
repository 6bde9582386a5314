#pragma once
// Activation recompute as Megatron-Core runs it: full recompute of whole layers (recompute_method uniform or block)
// and selective recompute of modules (training.recompute_modules), whose forward keeps nothing but its checkpoint and
// re-runs before its backward.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

// Whether `layer` is fully recomputed (uniform: every layer; block: the first recompute_num_layers of its chunk).
bool recomputed(const Context& cx, int layer);
// Whether a checkpointed module's body (mlp, moe) stores its input, the norm's output: the checkpoint keeps it unless
// the body is being re-run (the stored copy is still there); otherwise the weight gradients keep it, unless
// recompute_modules' layernorm discards it.
bool stores_body_input(const Context& cx, spec::RecomputeModule m);
// A norm's output re-created in backward (recompute_modules: layernorm); stored until the layer's backward ends.
void layernorm_recompute(Emitter& em, const Context& cx, const char* name, Ref dep);

}  // namespace stepsim::workload::megatron
