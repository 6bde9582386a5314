#include "stepsim/workload/megatron/attention.hpp"

#include <algorithm>

#include "stepsim/workload/megatron/context_parallel.hpp"
#include "stepsim/workload/megatron/linear.hpp"
#include "stepsim/workload/megatron/norms.hpp"
#include "stepsim/workload/megatron/qk_prep.hpp"
#include "stepsim/workload/megatron/recompute.hpp"

namespace stepsim::workload::megatron {

namespace {

// Causal flash attention's FLOPs: half of the s_loc x s score matrix, Q·Kᵀ and P·V.
double causal_attention_flops(const ModelDims& d) {
  return 2.0 * d.b * d.heads_loc * d.s_loc * d.s * (d.d_qk + d.d_v) * 0.5;
}

// (query, key) pairs a causal sequence of s tokens attends over when each query sees itself and at most `window`
// tokens before it: W(W+1)/2 for the first W queries' growing prefixes plus (s - W)(W + 1); s(s+1)/2 when W >= s.
double attended_pairs(int64_t s, int64_t window) {
  const double n = static_cast<double>(s);
  const double w = static_cast<double>(std::min(window, s - 1));
  return w * (w + 1) / 2 + (n - w) * (w + 1);
}

// What flash attention computes in this layer: its share of the causal prefix's FLOPs and the keys one query block
// walks (the attention efficiency curve's length). A windowed layer's kernel skips the key blocks wholly outside the
// window (FlashAttention's and cuDNN's window_size), so it does the window's pairs over about W + 1 keys.
struct FlashSpan {
  double share = 1;
  int64_t keys = 0;
};
FlashSpan flash_span(const Context& cx) {
  const ModelDims& d = cx.d();
  const spec::ModelSpec& m = cx.job().model;
  if (!m.is_window_layer(cx.at.layer)) return {1, d.s};
  return {attended_pairs(d.s, m.window_size) / attended_pairs(d.s, d.s), std::min(d.s, m.window_size + 1)};
}
int64_t attention_core_bytes(const Context& cx) {
  const ModelDims& d = cx.d();
  return cx.beta() * d.tokens * (d.q_width + d.kv_width + d.attn_out_width);
}
// Bytes of the MLA up-projections' outputs (K, V; Q with a query LoRA) for this micro-batch.
int64_t mla_up_proj_bytes(const Context& cx) {
  const ModelDims& d = cx.d();
  return cx.beta() * d.tokens * (d.kv_width + (cx.job().model.mla.q_lora_rank > 0 ? d.q_width : 0));
}

// Megatron-Core MLA: the down-projections are replicated and run on the tokens this rank holds (sequence-sharded under
// SP); only the compressed latents are all-gathered across TP. Returns the op after which Q, K and V are ready.
Ref mla_projections_fwd(Emitter& em, const Context& cx, Ref n, bool norm_kept, int64_t in_saved) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const auto& a = cx.job().model.mla;
  const int64_t kv_lat = a.kv_lora_rank + a.qk_rope_head_dim;
  const int64_t kv_up = d.heads_loc * (a.qk_nope_head_dim + a.v_head_dim);
  int64_t latent = kv_lat;
  if (a.q_lora_rank > 0) {
    em.compute(cx, gemm(cx, d.tokens_sp, a.q_lora_rank, d.h), "q_down_proj", {n}, norm_kept ? beta * d.tokens_sp * d.h : 0);
    latent += a.q_lora_rank;
  } else {
    Ref x = d.sp ? tp_all_gather(em, cx, beta * d.tokens * d.h, "q_proj_all_gather", n) : n;
    em.compute(cx, gemm(cx, d.tokens, d.q_width, d.h), "q_proj", {x}, in_saved);
  }
  // Same input tensor as q_down_proj / q_proj, which already stored it.
  Ref kd = em.compute(cx, gemm(cx, d.tokens_sp, kv_lat, d.h), "kv_down_proj", {n});
  Ref lat = d.sp ? tp_all_gather(em, cx, beta * d.tokens * latent, "mla_latent_all_gather", kd) : kd;
  if (a.q_lora_rank > 0) {
    em.compute(cx, gemm(cx, d.tokens, d.q_width, a.q_lora_rank), "q_up_proj", {lat}, beta * d.tokens * a.q_lora_rank);
  }
  return em.compute(cx, gemm(cx, d.tokens, kv_up, a.kv_lora_rank), "kv_up_proj", {lat}, beta * d.tokens * a.kv_lora_rank);
}

// Megatron-LM's unfused core attention (before FlashAttention), forward: QKᵀ as a strided-batched GEMM over the
// micro-batch x local heads, fused scale-mask-softmax, dropout, ·V. The causal mask is applied to the full s x s
// scores, so none of it is skipped. Stored for backward: Q, K, V, the probabilities (β bytes), the dropout mask
// (1 byte) and the dropped probabilities (β): 5·a·s²·b bytes per layer at β = 2 (Korthikanti et al. 2022), unless
// selective recompute re-creates them in backward. At `attention_dropout` 0 there is no dropout: PyTorch's dropout
// returns its input without a kernel (ATen `_dropout` at p = 0) and nothing of it is stored (2·a·s²·b).
bool runs_attention_dropout(const Context& cx) { return cx.job().model.attention_dropout > 0; }

Ref unfused_attention_fwd(Emitter& em, const Context& cx, Ref qkv, bool recompute) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const int64_t batch = d.b * d.heads_loc;
  const int64_t scores = batch * d.s_loc * d.s;
  const bool keep = !recompute && !cx.recomputes(spec::RecomputeModule::CoreAttn);
  Ref qk = em.compute(cx, batched_gemm(cx, batch, d.s_loc, d.s, d.d_qk), "attention_scores", {qkv},
                      recompute ? 0 : beta * d.tokens * (d.q_width + d.kv_width));
  Ref sm = em.compute(cx, memop(ComputeCategory::Elementwise, 2 * beta * scores), "scale_mask_softmax", {qk},
                      keep ? beta * scores : 0);
  const Ref dr = runs_attention_dropout(cx)
                     ? em.compute(cx, memop(ComputeCategory::Elementwise, (2 * beta + 1) * scores), "attention_dropout",
                                  {sm}, keep ? (beta + 1) * scores : 0)
                     : sm;
  if (recompute) return dr;  // the backward needs the probabilities, not the context again
  return em.compute(cx, batched_gemm(cx, batch, d.s_loc, d.d_v, d.s), "attention_context", {dr});
}

// Its backward: dV = Pᵀ·dO and dP = dO·Vᵀ, dropout and softmax backward over the s x s scores, dQ = dS·K and
// dK = dSᵀ·Q: twice the forward's GEMM FLOPs. Selective recompute first re-runs the scores, softmax and dropout.
Ref unfused_attention_bwd(Emitter& em, const Context& cx, Ref in) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const int64_t batch = d.b * d.heads_loc;
  const int64_t scores = batch * d.s_loc * d.s;
  if (cx.recomputes(spec::RecomputeModule::CoreAttn)) in = unfused_attention_fwd(em, cx.in(Phase::Recompute), in, true);
  em.compute(cx, batched_gemm(cx, batch, d.s, d.d_v, d.s_loc), "attention_context_dgrad_v", {in});
  em.compute(cx, batched_gemm(cx, batch, d.s_loc, d.s, d.d_v), "attention_context_dgrad_probs", {});
  if (runs_attention_dropout(cx)) {
    em.compute(cx, memop(ComputeCategory::Elementwise, (2 * beta + 1) * scores), "attention_dropout_bwd", {});
  }
  em.compute(cx, memop(ComputeCategory::Elementwise, 3 * beta * scores), "scale_mask_softmax_bwd", {});
  em.compute(cx, batched_gemm(cx, batch, d.s_loc, d.d_qk, d.s), "attention_scores_dgrad_q", {});
  return em.compute(cx, batched_gemm(cx, batch, d.s, d.d_qk, d.s_loc), "attention_scores_dgrad_k", {});
}

// The attention core's backward (after the output projection's): recompute where selective recompute asks, then the
// flash, unfused or context-parallel backward. Returns the op after which dQ, dK and dV are ready.
Ref core_attention_bwd(Emitter& em, const Context& cx, Ref dg) {
  const ModelDims& d = cx.d();
  const FlashSpan span = flash_span(cx);
  const double flops = causal_attention_flops(d) * span.share;
  const int64_t attn_bytes = attention_core_bytes(cx);
  if (cx.recomputes(spec::RecomputeModule::MlaUpProj)) {
    // The up-projections (and RoPE) re-run on the stored latents before the attention core's backward needs Q, K, V,
    // re-created in bf16.
    const auto& a = cx.job().model.mla;
    const Context rc = cx.in(Phase::Recompute).storing_outputs();
    if (a.q_lora_rank > 0)
      em.compute(rc, gemm(rc, d.tokens, d.q_width, a.q_lora_rank), "q_up_proj_recompute", {dg},
                 cx.beta() * d.tokens * d.q_width);
    em.compute(rc, gemm(rc, d.tokens, d.heads_loc * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank),
               "kv_up_proj_recompute", {dg}, cx.beta() * d.tokens * d.kv_width);
  }
  if (cx.job().training.attention_backend == spec::AttentionBackend::Unfused) return unfused_attention_bwd(em, cx, dg);
  if (cx.recomputes(spec::RecomputeModule::CoreAttn)) {
    // Megatron's selective recompute re-runs the core attention forward (with its K/V exchange) before its backward.
    const Context rc = cx.in(Phase::Recompute);
    if (d.c > 1) {
      cp_attention_fwd(em, rc, dg, flops, attn_bytes, 0);
    } else {
      em.compute(rc, attention_op(rc, flops, attn_bytes, span.keys), "core_attention_recompute", {dg});
    }
  }
  if (d.c > 1) return cp_attention_bwd(em, cx, dg, flops, attn_bytes);
  // Flash-attention backward: 5 matmuls of the forward's 2, i.e. 2.5x its FLOPs.
  return em.compute(cx, attention_op(cx, 2.5 * flops, 2 * attn_bytes, span.keys), "core_attention_bwd", {dg});
}

// MLA's projections backward from the attention core's gradients. Latent gradients are partial sums over the TP
// ranks' heads: reduce-scattered back to the sequence shards under SP (all-reduced without SP) before the replicated
// down-projections' backward. Returns the op the input norm's backward waits for.
Ref mla_projections_bwd(Emitter& em, const Context& cx, Ref dkv) {
  const ModelDims& d = cx.d();
  const auto& a = cx.job().model.mla;
  const int64_t kv_lat = a.kv_lora_rank + a.qk_rope_head_dim;
  const int64_t kv_up = d.heads_loc * (a.qk_nope_head_dim + a.v_head_dim);
  em.compute(cx, gemm(cx, d.tokens, a.kv_lora_rank, kv_up), "kv_up_proj_dgrad", {dkv});
  wgrad(em, cx, a.kv_lora_rank, kv_up, d.tokens, "kv_up_proj_wgrad");
  Ref q{};
  int64_t latent = kv_lat;
  if (a.q_lora_rank > 0) {
    em.compute(cx, gemm(cx, d.tokens, a.q_lora_rank, d.q_width), "q_up_proj_dgrad", {});
    wgrad(em, cx, a.q_lora_rank, d.q_width, d.tokens, "q_up_proj_wgrad");
    latent += a.q_lora_rank;
  } else {
    q = column_parallel_bwd(em, cx, "q_proj", d.tokens, d.q_width, d.h, em.last(Stream::Compute), d.sp);
  }
  Ref lat = em.coll(cx, d.sp ? CollType::ReduceScatter : CollType::AllReduce, GroupKind::Tp,
                    cx.beta() * d.tokens * latent, "mla_latent_grad_reduce", em.last(Stream::Compute));
  em.compute(cx, gemm(cx, d.tokens_sp, d.h, kv_lat), "kv_down_proj_dgrad", {lat});
  wgrad(em, cx, d.h, kv_lat, d.tokens_sp, "kv_down_proj_wgrad");
  if (a.q_lora_rank > 0) {
    em.compute(cx, gemm(cx, d.tokens_sp, d.h, a.q_lora_rank), "q_down_proj_dgrad", {});
    wgrad(em, cx, d.h, a.q_lora_rank, d.tokens_sp, "q_down_proj_wgrad");
  }
  return q.count ? q : em.last(Stream::Compute);
}

}  // namespace

Ref attention_fwd(Emitter& em, const Context& cx, Ref in) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const Ref n = norm_fwd(em, cx, "input_layernorm", in);
  // The projections store the norm's output for their weight gradients, unless recompute_modules' layernorm discards
  // it (re-created at the start of this block's backward).
  const bool norm_kept = !cx.recomputes(spec::RecomputeModule::Layernorm);
  const int64_t in_saved = norm_kept ? beta * (d.sp ? d.tokens_sp : d.tokens) * d.h : 0;
  const Ref qkv = cx.job().model.attention == spec::AttentionType::Mla
                      ? mla_projections_fwd(em, cx, n, norm_kept, in_saved)
                      : qk_prep_fwd(em, cx,
                                    gathered_gemm(em, cx, "qkv_all_gather",
                                                  gemm(cx, d.tokens, d.q_width + d.kv_width, d.h), "qkv_proj", n,
                                                  in_saved));
  // Flash attention, causal; stores Q, K, V and the softmax statistics.
  const FlashSpan span = flash_span(cx);
  const double flops = causal_attention_flops(d) * span.share;
  const int64_t attn_bytes = attention_core_bytes(cx);
  int64_t attn_saved =
      beta * d.tokens * (d.q_width + d.kv_width) + expanded_kv_bytes(cx) + 4 * d.b * d.heads_loc * d.s_loc;
  // recompute_modules' mla_up_proj discards the up-projections' outputs (K, V and, with a query LoRA, Q) that the
  // attention core would keep; they are re-projected before its backward.
  if (cx.recomputes(spec::RecomputeModule::MlaUpProj)) attn_saved -= mla_up_proj_bytes(cx);
  // The core keeps its output O (bf16) for its backward. Without fp8 the projection's saved input is that same
  // tensor, counted there; under fp8 the projection keeps its own fp8 copy, so O is counted here as well.
  if (fp8_gemm(cx, gemm(cx, d.tokens, d.h, d.attn_out_width))) attn_saved += beta * d.tokens * d.attn_out_width;
  Ref core;
  if (d.c > 1) {
    core = cp_attention_fwd(em, cx, qkv, flops, attn_bytes, attn_saved);
  } else if (cx.job().training.attention_backend == spec::AttentionBackend::Unfused) {
    core = unfused_attention_fwd(em, cx, qkv, false);
  } else {
    core = em.compute(cx, attention_op(cx, flops, attn_bytes, span.keys), "core_attention", {qkv}, attn_saved);
  }
  Ref r = scattered_gemm(em, cx, gemm(cx, d.tokens, d.h, d.attn_out_width), "attention_proj", core,
                         beta * d.tokens * d.attn_out_width, d.sp ? "attention_reduce_scatter" : "attention_all_reduce");
  return bias_dropout_add_fwd(em, cx, "attention_bias_dropout_add", {r});
}

Ref attention_bwd(Emitter& em, const Context& cx, Ref in) {
  const ModelDims& d = cx.d();
  // Output-discarding recompute fires when the gradient reaches the block's output (Megatron-Core's
  // CheckpointWithoutOutput hook), i.e. first in its backward.
  layernorm_recompute(em, cx, "input_layernorm_recompute", in);
  const Ref b = bias_dropout_add_bwd(em, cx, "attention_bias_dropout_add_bwd", in);
  const Ref dg = grad_gathered_gemms(em, cx, "attention_proj_grad_all_gather", gemm(cx, d.tokens, d.attn_out_width, d.h),
                                     "attention_proj_dgrad", d.attn_out_width, d.h, "attention_proj_wgrad", b);
  const Ref dkv = core_attention_bwd(em, cx, dg);
  const Ref r = cx.job().model.attention == spec::AttentionType::Mla
                    ? mla_projections_bwd(em, cx, dkv)
                    : column_parallel_bwd(em, cx, "qkv_proj", d.tokens, d.q_width + d.kv_width, d.h,
                                          qk_prep_bwd(em, cx, dkv), d.sp);
  return norm_bwd(em, cx, "input_layernorm_bwd", r);
}

}  // namespace stepsim::workload::megatron
