#pragma once
// The memory-bound work between the QKV projection and the attention core that a framework runs as kernels of its
// own: rotary embedding of Q and K, and, under grouped-query attention, K and V expanded to every query head
// (torchtitan's repeat_kv before SDPA). Megatron-Core's profile has neither as a separate cost (Transformer Engine
// fuses RoPE; its attention reads grouped K/V): both emit nothing there.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

// K's width within the local K+V projection (by head dimension); V's is the rest.
int64_t k_width(const ModelDims& d);
// Bytes the expanded K and V add to what the attention core stores for backward (0 without expansion).
int64_t expanded_kv_bytes(const Context& cx);
// Elements of K and V as the attention core reads them: expanded to every local query head where the framework
// repeats them (torchtitan), else as projected.
int64_t attention_kv_elements(const Context& cx);
// Forward after the projection `qkv`; returns the op the attention core waits for.
Ref qk_prep_fwd(Emitter& em, const Context& cx, Ref qkv);
// Backward after the attention core's `dqkv`; returns the op the projection's backward waits for.
Ref qk_prep_bwd(Emitter& em, const Context& cx, Ref dqkv);

}  // namespace stepsim::workload::megatron
