#include "stepsim/workload/megatron/embedding_head.hpp"

#include "stepsim/workload/megatron/linear.hpp"
#include "stepsim/workload/megatron/norms.hpp"

namespace stepsim::workload::megatron {

namespace {

// torchtitan computes the loss with PyTorch's own cross-entropy on an fp32 copy of the logits (loss_parallel's
// DTensor version under TP).
bool torch_loss(const Context& cx) { return cx.job().training.framework == spec::Framework::Torchtitan; }

// Working buffers of PyTorch's cross-entropy beyond the stored fp32 log-probabilities, in bytes per local logit.
// Forward: the bf16 logits (still referenced by the caller) and their fp32 copy; loss_parallel's _log_softmax also
// holds the shifted logits and their exponentials. Backward: nll_loss's and log_softmax's fp32 gradients;
// loss_parallel's fused backward holds the one-hot gradient, its masked copy (torch.where), exp of the
// log-probabilities and their sum.
// Compiled (training.compile_loss), Inductor reads the bf16 logits in fused reductions: it keeps them (and a per-token
// log-sum-exp) for the backward, which writes the bf16 gradient directly.
int64_t torch_loss_forward_bytes(const Context& cx) {
  if (cx.job().training.compile_loss) return 0;
  return cx.d().t > 1 ? 10 : 6;
}
int64_t torch_loss_backward_bytes(const Context& cx) {
  if (cx.job().training.compile_loss) return 2;
  return cx.d().t > 1 ? 12 : 8;
}
// Stored for the backward per local logit: the fp32 softmax / log-probabilities, or the compiled loss's bf16 logits.
int64_t loss_saved_bytes(const Context& cx) { return torch_loss(cx) && cx.job().training.compile_loss ? 2 : 4; }

}  // namespace

Ref embedding_fwd(Emitter& em, const Context& cx, Ref in) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const Ref e = em.compute(cx, memop(ComputeCategory::Embedding, 2 * beta * d.tokens * d.h), "embedding", {in});
  // Vocab-parallel embedding: partial lookups are summed over TP. Megatron reduce-scatters straight to the sequence
  // shards under SP, except with learned positions (all-reduce, add positions, split locally).
  const bool rs = d.sp && cx.job().model.position_embedding != spec::PositionEmbedding::Learned;
  const Ref r = rs ? tp_reduce_scatter(em, cx, beta * d.tokens * d.h, "embedding_reduce_scatter", e)
                   : em.coll(cx, CollType::AllReduce, GroupKind::Tp, beta * d.tokens * d.h, "embedding_all_reduce", e);
  return em.compute(cx, memop(ComputeCategory::Elementwise, 2 * beta * d.tokens_sp * d.h), "embedding_dropout", {r},
                    cx.f().mask_bytes * d.tokens_sp * d.h);
}

Ref embedding_bwd(Emitter& em, const Context& cx, Ref in) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  Ref x = em.compute(cx, memop(ComputeCategory::Elementwise, 3 * beta * d.tokens_sp * d.h), "embedding_dropout_bwd",
                     {in});
  if (d.sp) x = tp_all_gather(em, cx, beta * d.tokens * d.h, "embedding_grad_all_gather", x);
  return em.compute(cx, memop(ComputeCategory::Embedding, (beta + 2 * cx.f().grad_bytes) * d.tokens * d.h),
                    "embedding_bwd", {x});
}

Ref head_fwd(Emitter& em, const Context& cx, Ref in) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const int64_t vloc = d.vocab_pad / d.t;
  const Ref n = norm_fwd(em, cx, "final_layernorm", in, NormSite::Final);
  Ref x = d.sp ? tp_all_gather(em, cx, beta * d.tokens * d.h, "output_all_gather", n) : n;
  // Transformer Engine keeps the output layer in bf16 under fp8; DTensor's linear keeps its gathered input.
  const Context out = cx.keeping_bf16();
  const bool keeps_gathered_input = d.sp && cx.f().profile.dtensor_tp;
  Ref o = em.compute(out, gemm(out, d.tokens, vloc, d.h), "output_layer", {x},
                     beta * (d.sp && !keeps_gathered_input ? d.tokens_sp : d.tokens) * d.h);
  if (cx.job().training.cross_entropy_fusion == spec::CrossEntropyFusion::Te) {
    // Transformer Engine's Triton cross-entropy as Megatron-Bridge 25.09-26.04 ran it (TE 2.x up to mid-2026): one
    // program per token row reads the bf16 logits for the row's max and sum of exponentials (online softmax); the
    // (max, sum, target logit) of every TP rank are all-gathered (3 fp32 per token); a second pass reads the logits
    // again and writes the loss and the gradient over them in place, kept until the backward (beta bytes per logit,
    // where the unfused path keeps its fp32 softmax). Streaming passes: the elementwise efficiency.
    Ref s1 = em.compute(cx, memop(ComputeCategory::Elementwise, beta * d.tokens * vloc), "cross_entropy_stats", {o});
    // The logits (stored from the second pass on, which turns them into the gradient) and the gathered input.
    em.working_buffer(em.next_op() - 1, beta * d.tokens * (vloc + d.h));
    Ref g = em.coll(cx, CollType::AllGather, GroupKind::Tp, 12 * d.tokens * d.t, "cross_entropy_all_gather", s1);
    Ref s2 = em.compute(cx, memop(ComputeCategory::Elementwise, 2 * beta * d.tokens * vloc), "cross_entropy_loss_grad",
                        {g}, beta * d.tokens * vloc);
    return em.compute(cx, memop(ComputeCategory::Elementwise, 8 * d.tokens), "loss", {s2});
  }
  // Vocab-parallel cross-entropy (fp32 softmax): all-reduce of the max, of the sum of exponentials and of the target
  // logits across the tensor-parallel group. Megatron's jit-fused `native` path is costed alike.
  Ref c1 = em.compute(cx, memop(ComputeCategory::Loss, (beta + 4) * d.tokens * vloc), "cross_entropy_max", {o},
                      loss_saved_bytes(cx) * d.tokens * vloc);
  // The bf16 logits beside their fp32 copy (`.float()`, kept for backward as the softmax) and the gathered input
  // (measured: 2,068 MiB for 8K tokens x 128,256 logits + 4,096 hidden; working_memory.hpp). torchtitan's loss
  // (F.cross_entropy(pred.float()), not compiled) keeps log_softmax's fp32 output apart from the fp32 copy.
  // Under DTensor TP that gathered input is the output layer's saved input, counted there.
  const int64_t gathered_input = keeps_gathered_input ? 0 : beta * d.tokens * d.h;
  em.working_buffer(em.next_op() - 1,
                    (torch_loss(cx) ? torch_loss_forward_bytes(cx) : beta) * d.tokens * vloc + gathered_input);
  Ref a1 = em.coll(cx, CollType::AllReduce, GroupKind::Tp, 4 * d.tokens, "cross_entropy_all_reduce", c1);
  Ref c2 = em.compute(cx, memop(ComputeCategory::Loss, 8 * d.tokens * vloc), "cross_entropy_softmax", {a1});
  Ref a2 = em.coll(cx, CollType::AllReduce, GroupKind::Tp, 8 * d.tokens, "cross_entropy_all_reduce", c2);
  return em.compute(cx, memop(ComputeCategory::Elementwise, 8 * d.tokens), "loss", {a2});
}

Ref head_bwd(Emitter& em, const Context& cx, Ref in) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const int64_t vloc = d.vocab_pad / d.t;
  // TE's backward scales the stored gradient rows by the per-token incoming gradient in place (Megatron's loss is not
  // reduced inside the kernel, so the all-ones shortcut does not apply); the unfused path turns its fp32 softmax into
  // the bf16 gradient.
  const bool te = cx.job().training.cross_entropy_fusion == spec::CrossEntropyFusion::Te;
  Ref c = te ? em.compute(cx, memop(ComputeCategory::Elementwise, 2 * beta * d.tokens * vloc), "cross_entropy_bwd", {in})
             : em.compute(cx, memop(ComputeCategory::Loss, (4 + beta) * d.tokens * vloc), "cross_entropy_bwd", {in});
  // The unfused path's bf16 gradient of the logits beside the fp32 softmax it is made from (measured 2,004 MiB at
  // 8K x 128,256); TE's kernel wrote its gradient in place. PyTorch's nll_loss and log_softmax backwards each write an
  // fp32 gradient of all logits beside the stored log-probabilities.
  if (!te) {
    em.working_buffer(em.next_op() - 1, (torch_loss(cx) ? torch_loss_backward_bytes(cx) : beta) * d.tokens * vloc);
  }
  // Megatron's own ColumnParallelLinear, in bf16: TE's userbuffers do not cover it.
  Ref r = column_parallel_bwd(em, cx.keeping_bf16(), "output_layer", d.tokens, vloc, d.h, c, d.sp, false);
  return norm_bwd(em, cx, "final_layernorm_bwd", r, NormSite::Final);
}

}  // namespace stepsim::workload::megatron
