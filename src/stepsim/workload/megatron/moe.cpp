#include "stepsim/workload/megatron/moe.hpp"

#include <algorithm>

#include "stepsim/workload/megatron/linear.hpp"
#include "stepsim/workload/megatron/moe_dispatch.hpp"
#include "stepsim/workload/megatron/norms.hpp"
#include "stepsim/workload/megatron/recompute.hpp"

namespace stepsim::workload::megatron {

namespace {

// Input width of an MLP of `ffn` (fc1's output): doubled for a gated (SwiGLU) activation.
int64_t gated_ffn_in(const Context& cx, int64_t ffn) {
  return cx.job().model.activation == spec::Activation::Swiglu ? 2 * ffn : ffn;
}

// recompute_modules' shared_experts (or moe) keeps nothing of the shared expert.
bool keeps_shared_expert(const Context& cx) {
  return !cx.discarding(spec::RecomputeModule::Moe) && !cx.discarding(spec::RecomputeModule::SharedExperts);
}

Ref shared_expert_fc1_fwd(Emitter& em, const Context& cx, Ref in) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const int64_t fs = cx.job().model.moe->shared_expert_ffn_hidden_size, fs_in = gated_ffn_in(cx, fs);
  Ref sx = d.sp ? tp_all_gather(em, cx, beta * d.tokens * d.h, "shared_expert_all_gather", in) : in;
  Ref s1 = em.compute(cx, gemm(cx, d.tokens, fs_in / d.t, d.h), "shared_expert_fc1", {sx});
  return em.compute(cx, memop(ComputeCategory::Elementwise, beta * d.tokens * (fs_in + fs) / d.t), "shared_expert_act",
                    {s1}, keeps_shared_expert(cx) ? beta * d.tokens * fs_in / d.t : 0);
}

Ref shared_expert_fc2_fwd(Emitter& em, const Context& cx, Ref act) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const int64_t fs = cx.job().model.moe->shared_expert_ffn_hidden_size;
  Ref s2 = em.compute(cx, gemm(cx, d.tokens, d.h, fs / d.t), "shared_expert_fc2", {act},
                      keeps_shared_expert(cx) ? beta * d.tokens * fs / d.t : 0);
  return em.coll(cx, d.sp ? CollType::ReduceScatter : CollType::AllReduce, GroupKind::Tp, beta * d.tokens * d.h,
                 "shared_expert_reduce", s2);
}

// The shared expert, after the routed experts on the same stream (without moe_shared_expert_overlap).
Ref shared_expert_fwd(Emitter& em, const Context& cx, Ref out) {
  return shared_expert_fc2_fwd(em, cx, shared_expert_fc1_fwd(em, cx, out));
}

// The shared expert's backward from the layer's output gradient; returns the op after which its input gradient is
// ready (recompute first under recompute_modules' shared_experts).
Ref shared_expert_bwd(Emitter& em, const Context& cx, Ref grad) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const int64_t fs = cx.job().model.moe->shared_expert_ffn_hidden_size, fs_in = gated_ffn_in(cx, fs);
  if (cx.recomputes(spec::RecomputeModule::SharedExperts) && !cx.recomputes(spec::RecomputeModule::Moe)) {
    shared_expert_fwd(em, cx.in(Phase::Recompute), grad);
  }
  Ref sg = d.sp ? tp_all_gather(em, cx, beta * d.tokens * d.h, "shared_expert_grad_all_gather", grad) : grad;
  em.compute(cx, gemm(cx, d.tokens, fs / d.t, d.h), "shared_expert_fc2_dgrad", {sg});
  wgrad(em, cx, fs / d.t, d.h, d.tokens, "shared_expert_fc2_wgrad");
  Ref sa = em.compute(cx, memop(ComputeCategory::Elementwise, beta * d.tokens * (2 * fs_in + fs) / d.t),
                      "shared_expert_act_bwd", {});
  return column_parallel_bwd(em, cx, "shared_expert_fc1", d.tokens, fs_in / d.t, d.h, sa, d.sp);
}

// The MoE layer after its norm. Under recompute_modules' moe the forward keeps only the router's input (the
// checkpoint) and the whole layer (router, dispatch, experts, combine, shared experts) re-runs before its backward;
// moe_act keeps the experts' activation output out of memory (re-created before fc2's backward).
Ref moe_body_fwd(Emitter& em, const Context& cx, Ref n) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const auto& moe = *cx.job().model.moe;
  const int64_t E = moe.num_experts, e_loc = E / d.e;
  const int64_t routed = moe_tokens(cx).routed;
  const int64_t fe = moe.ffn_hidden_size, fe_in = gated_ffn_in(cx, fe);
  const bool keep = !cx.discarding(spec::RecomputeModule::Moe);
  const bool keep_input = stores_body_input(cx, spec::RecomputeModule::Moe);
  const bool keep_act = keep && !cx.discarding(spec::RecomputeModule::MoeAct);
  const bool shared = moe.shared_expert_ffn_hidden_size > 0, overlap = shared && moe.shared_expert_overlap;
  // The router (and the shared expert) keep the normalized input for their weight gradients; TE keeps it in bf16.
  const Context router = cx.keeping_bf16();
  Ref rt = em.compute(router, gemm(router, d.tokens_sp, E, d.h), "router", {n}, keep_input ? beta * d.tokens_sp * d.h : 0);
  Ref tk = em.compute(cx, memop(ComputeCategory::Elementwise, 8 * d.tokens_sp * E), "router_topk", {rt},
                      keep ? 4 * d.tokens_sp * E : 0);
  Ref g = moe_to_experts(em, cx, tk, false);
  em.node(cx, Piece::Mlp, false);
  // moe_shared_expert_overlap: the shared expert's fc1 is issued while the dispatch runs, its fc2 while the combine runs.
  Ref sa = overlap ? shared_expert_fc1_fwd(em, cx, n) : Ref{};
  g = moe_expert_order(em, cx, g, false);
  const int64_t per_expert = std::max<int64_t>(1, routed / e_loc);
  Ref f1 = em.compute(cx, gemm(cx, per_expert, fe_in / d.et, d.h, static_cast<int>(e_loc)), "expert_fc1", {g},
                      keep ? beta * routed * d.h : 0);
  Ref a = em.compute(cx, memop(ComputeCategory::Elementwise, beta * routed * (fe_in + fe) / d.et), "expert_act", {f1},
                     keep ? beta * routed * fe_in / d.et : 0);
  Ref f2 = em.compute(cx, gemm(cx, per_expert, d.h, fe / d.et, static_cast<int>(e_loc)), "expert_fc2", {a},
                      keep_act ? beta * routed * fe / d.et : 0);
  f2 = moe_token_order(em, cx, f2, false);
  // Under the overlap the shared fc2 is queued before the combine's unpermute, so it computes while the combine moves.
  const Ref shared_out = overlap ? shared_expert_fc2_fwd(em, cx, sa) : Ref{};
  Ref out = moe_from_experts(em, cx, f2, false);
  if (overlap) {
    em.wait_at_next(shared_out);  // the layer's output waits for the shared expert too
    return out;
  }
  return shared && !cx.f().ep_overlap ? shared_expert_fwd(em, cx, out) : out;
}

// The grouped expert MLP's backward, input and weight gradients. delay_wgrad_compute: the experts' weight gradients
// are issued after their input gradients, and the dispatch's backward all-to-all waits for the input gradients only
// (it runs beside the weight-gradient GEMMs). Returns the op after which the tokens' gradient is in token order.
Ref experts_bwd(Emitter& em, const Context& cx, Ref g) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const auto& moe = *cx.job().model.moe;
  const int64_t e_loc = moe.num_experts / d.e;
  const int64_t routed = moe_tokens(cx).routed;
  const int64_t fe = moe.ffn_hidden_size, fe_in = gated_ffn_in(cx, fe);
  const int64_t per_expert = std::max<int64_t>(1, routed / e_loc);
  const int batch = static_cast<int>(e_loc);
  if (cx.recomputes(spec::RecomputeModule::MoeAct) && !cx.recomputes(spec::RecomputeModule::Moe)) {
    // Output-discarding recompute of the experts' activation, for fc2's weight gradient.
    em.compute(cx.in(Phase::Recompute), memop(ComputeCategory::Elementwise, beta * routed * (fe_in + fe) / d.et),
               "expert_act_recompute", {g}, beta * routed * fe / d.et);
  }
  const bool delay = cx.job().training.delay_wgrad_compute;
  em.compute(cx, gemm(cx, per_expert, fe / d.et, d.h, batch), "expert_fc2_dgrad", {g});
  if (!delay) wgrad(em, cx, fe / d.et, d.h, per_expert, "expert_fc2_wgrad", {}, batch);
  em.compute(cx, memop(ComputeCategory::Elementwise, beta * routed * (2 * fe_in + fe) / d.et), "expert_act_bwd", {});
  em.compute(cx, gemm(cx, per_expert, d.h, fe_in / d.et, batch), "expert_fc1_dgrad", {});
  if (!delay) wgrad(em, cx, d.h, fe_in / d.et, per_expert, "expert_fc1_wgrad", {}, batch);
  const Ref input_grad = moe_token_order(em, cx, em.last(Stream::Compute), true);
  if (delay) {
    wgrad(em, cx, fe / d.et, d.h, per_expert, "expert_fc2_wgrad", {}, batch);
    wgrad(em, cx, d.h, fe_in / d.et, per_expert, "expert_fc1_wgrad", {}, batch);
  }
  return input_grad;
}

}  // namespace

// Megatron-Core's MoE layer with its token dispatcher. The shared expert runs after the routed experts on the same
// stream (Megatron's default, without moe_shared_expert_overlap).
Ref moe_fwd(Emitter& em, const Context& cx, Ref in) {
  em.node(cx, Piece::Pre, false);
  const Ref n = norm_fwd(em, cx, "pre_mlp_layernorm", in);
  // Under the combined 1F1B schedule the shared expert runs in the pre-dispatch node, before the router (Megatron's
  // submodule_pre_dispatch_forward), and its output joins in the combine node.
  const Ref shared = cx.f().ep_overlap && cx.job().model.moe->shared_expert_ffn_hidden_size > 0
                         ? shared_expert_fwd(em, cx, n)
                         : Ref{};
  Ref out = moe_body_fwd(em, cx, n);
  em.node(cx, Piece::Combine, false);
  const Ref r = bias_dropout_add_fwd(em, cx, "mlp_bias_dropout_add", {out, shared});
  em.combine_node_stream(false);
  return r;
}

Ref moe_bwd(Emitter& em, const Context& cx, Ref in) {
  const ModelDims& d = cx.d();
  const auto& moe = *cx.job().model.moe;
  const int64_t E = moe.num_experts;
  const bool shared_expert = moe.shared_expert_ffn_hidden_size > 0;
  const bool ep_overlap = cx.f().ep_overlap;
  em.node(cx, Piece::Combine, true);
  layernorm_recompute(em, cx, "pre_mlp_layernorm_recompute", in);
  em.combine_node_stream(true);  // the combine node's backward, until its all-to-all (moe_to_experts)
  const Ref b = bias_dropout_add_bwd(em, cx, "mlp_bias_dropout_add_bwd", in);
  // recompute_modules' moe: the whole layer re-runs (its dispatch and combine included) when the gradient reaches its
  // output.
  if (cx.recomputes(spec::RecomputeModule::Moe)) moe_body_fwd(em, cx.in(Phase::Recompute), b);
  Ref shared{};
  // Created last in forward, autograd runs the shared expert first; with moe_shared_expert_overlap it runs beside the
  // combine's gradient exchange instead. Under the combined 1F1B schedule it belongs to the pre-dispatch node: its
  // backward comes after the dispatch's.
  if (shared_expert && !moe.shared_expert_overlap && !ep_overlap) shared = shared_expert_bwd(em, cx, b);
  Ref g = moe_to_experts(em, cx, b, true);
  if (shared_expert && moe.shared_expert_overlap) shared = shared_expert_bwd(em, cx, b);
  em.node(cx, Piece::Mlp, true);
  g = moe_expert_order(em, cx, g, true);
  const Ref input_grad = experts_bwd(em, cx, g);
  Ref pm = moe_from_experts(em, cx, input_grad, true);
  const Context router = cx.keeping_bf16();
  const Ref rt = em.compute(router, gemm(router, d.tokens_sp, d.h, E), "router_dgrad", {pm});
  wgrad(em, router, d.h, E, d.tokens_sp, "router_wgrad");
  if (shared_expert && !moe.shared_expert_overlap && ep_overlap) shared = shared_expert_bwd(em, cx, b);
  return em.compute(cx, memop(ComputeCategory::Norm, 3 * cx.beta() * d.tokens_sp * d.h), "pre_mlp_layernorm_bwd",
                    {rt, shared});
}

}  // namespace stepsim::workload::megatron
