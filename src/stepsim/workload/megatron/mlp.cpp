#include "stepsim/workload/megatron/mlp.hpp"

#include "stepsim/workload/megatron/linear.hpp"
#include "stepsim/workload/megatron/norms.hpp"
#include "stepsim/workload/megatron/recompute.hpp"

namespace stepsim::workload::megatron {

namespace {

bool is_swiglu(const Context& cx) { return cx.job().model.activation == spec::Activation::Swiglu; }
const SiteTraffic& activation_kernels(const Context& cx) {
  return is_swiglu(cx) ? cx.f().profile.kernels.swiglu : cx.f().profile.kernels.gelu;
}

}  // namespace

Ref activation_fwd(Emitter& em, const Context& cx, Ref in, int64_t saved) {
  const ModelDims& d = cx.d();
  return em.compute(cx, memop(ComputeCategory::Elementwise,
                              activation_kernels(cx).fwd.per_element(cx.beta()) * d.tokens * d.ffn / d.t),
                    is_swiglu(cx) ? "swiglu" : "gelu", {in}, saved);
}

Ref activation_bwd(Emitter& em, const Context& cx) {
  const ModelDims& d = cx.d();
  return em.compute(cx, memop(ComputeCategory::Elementwise,
                              activation_kernels(cx).bwd.per_element(cx.beta()) * d.tokens * d.ffn / d.t),
                    is_swiglu(cx) ? "swiglu_bwd" : "gelu_bwd", {});
}

namespace {

// The dense MLP after its norm: fc1, activation, fc2 and the TP reduction. Under recompute_modules' mlp its forward
// keeps only fc1's input (the checkpoint) and the whole body, communication included, re-runs before its backward.
Ref mlp_body_fwd(Emitter& em, const Context& cx, Ref n, bool through_fc2 = true) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const bool keep = !cx.discarding(spec::RecomputeModule::Mlp);
  const bool keep_input = stores_body_input(cx, spec::RecomputeModule::Mlp);
  Ref f1 = gathered_gemm(em, cx, "fc1_all_gather", gemm(cx, d.tokens, d.ffn_in / d.t, d.h), "fc1", n,
                         keep_input ? beta * (d.sp ? d.tokens_sp : d.tokens) * d.h : 0);
  const Op fc2 = gemm(cx, d.tokens, d.h, d.ffn / d.t);
  const int64_t fc2_input = keep ? beta * d.tokens * d.ffn / d.t : 0;
  if (!through_fc2) {
    // The recompute stops once fc2's input is saved (autograd packs a GEMM's inputs before it runs): that tensor is
    // held as the GEMM would have held it.
    const int64_t kept = keep ? beta * d.tokens * d.ffn_in / d.t : 0;
    return activation_fwd(em, cx, f1, kept + saved_input_bytes(cx, fc2, fc2_input));
  }
  Ref a = activation_fwd(em, cx, f1, keep ? beta * d.tokens * d.ffn_in / d.t : 0);
  return scattered_gemm(em, cx, fc2, "fc2", a, fc2_input, d.sp ? "mlp_reduce_scatter" : "mlp_all_reduce");
}

}  // namespace

Ref mlp_fwd(Emitter& em, const Context& cx, Ref in) {
  em.node(cx, Piece::Mlp, false);
  // A recompute that stops at the last tensor the backward needs ends with fc2's input.
  const bool stop = cx.at.phase == Phase::Recompute && cx.f().profile.recompute_stops_early;
  const Ref r = mlp_body_fwd(em, cx, norm_fwd(em, cx, "pre_mlp_layernorm", in), !stop);
  return stop ? r : bias_dropout_add_fwd(em, cx, "mlp_bias_dropout_add", {r});
}

Ref mlp_bwd(Emitter& em, const Context& cx, Ref in) {
  const ModelDims& d = cx.d();
  em.node(cx, Piece::Mlp, true);
  layernorm_recompute(em, cx, "pre_mlp_layernorm_recompute", in);
  const Ref b = bias_dropout_add_bwd(em, cx, "mlp_bias_dropout_add_bwd", in);
  // The checkpoint re-runs when the gradient reaches its output.
  if (cx.recomputes(spec::RecomputeModule::Mlp)) mlp_body_fwd(em, cx.in(Phase::Recompute), b);
  grad_gathered_gemms(em, cx, "fc2_grad_all_gather", gemm(cx, d.tokens, d.ffn / d.t, d.h), "fc2_dgrad", d.ffn / d.t,
                      d.h, "fc2_wgrad", b);
  Ref a = activation_bwd(em, cx);
  Ref r = column_parallel_bwd(em, cx, "fc1", d.tokens, d.ffn_in / d.t, d.h, a, d.sp);
  return norm_bwd(em, cx, "pre_mlp_layernorm_bwd", r);
}

}  // namespace stepsim::workload::megatron
