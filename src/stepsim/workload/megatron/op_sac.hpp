#pragma once
// torchtitan's op-level selective activation checkpointing (activation_checkpoint.mode 'selective' with
// selective_ac_option 'op', parallelize_llama.py): each TransformerBlock runs under torch.utils.checkpoint with a
// policy that saves the outputs of aten.mm (all but every second one), of SDPA, of the functional reduce-scatter and of
// abs/max, and recomputes everything else when the block's backward first needs it. In a Llama block the matmuls run
// wq, wk, wv, wo, w1, w3, w2, so wk, wo and w3 are recomputed with every elementwise op. torchao's Float8 linears
// call aten._scaled_mm, which the policy does not save: under fp8 every projection the backward needs is recomputed
// (its time); compiled, the memory kept is bf16's (op_sac.cpp says why).
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

// What the policy keeps for a layer's backward: the block's input (the checkpoint) and the saved ops' outputs.
int64_t op_sac_saved_bytes(const Context& cx);
// The discarded part of the layer's forward, re-run when its backward starts (after `grad`, the gradient arriving).
void op_sac_recompute(Emitter& em, const Context& cx, Ref grad);

}  // namespace stepsim::workload::megatron
