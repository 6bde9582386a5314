#pragma once
// Context-parallel core attention (docs/MODEL.md, "Context parallelism"): all-gather of K/V, Ulysses all-to-all,
// ring attention, and the hierarchical a2a+p2p, forward and backward.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

// `flops` and `bytes` are the rank's whole share (its s/c queries against the keys they see); returns the op after
// which the output is ready.
Ref cp_attention_fwd(Emitter& em, const Context& cx, Ref qkv, double flops, int64_t bytes, int64_t saved);
// Returns the op after which dQ, dK and dV are on their owner.
Ref cp_attention_bwd(Emitter& em, const Context& cx, Ref dout, double flops, int64_t bytes);

}  // namespace stepsim::workload::megatron
