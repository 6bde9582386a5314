#include "stepsim/workload/megatron/qk_prep.hpp"

namespace stepsim::workload::megatron {

namespace {

const LayerKernels& prep_kernels(const Context& cx) { return cx.f().profile.kernels; }
// Elements of Q and K for this micro-batch.
int64_t qk_elements(const Context& cx) { return cx.d().tokens * (cx.d().q_width + k_width(cx.d())); }
// Elements of K and V once expanded to every local query head; 0 when K/V are not grouped.
int64_t expanded_kv_elements(const Context& cx) {
  const ModelDims& d = cx.d();
  const int64_t full = d.heads_loc * (d.d_qk + d.d_v);
  return d.kv_width < full ? d.tokens * full : 0;
}
bool uses_rope(const Context& cx) { return cx.job().model.position_embedding == spec::PositionEmbedding::Rope; }

}  // namespace

int64_t k_width(const ModelDims& d) { return d.kv_width * d.d_qk / (d.d_qk + d.d_v); }

int64_t expanded_kv_bytes(const Context& cx) {
  if (prep_kernels(cx).repeat_kv.fwd.per_element(cx.beta()) == 0 || expanded_kv_elements(cx) == 0) return 0;
  return cx.beta() * (expanded_kv_elements(cx) - cx.d().tokens * cx.d().kv_width);
}

int64_t attention_kv_elements(const Context& cx) {
  const bool repeated = prep_kernels(cx).repeat_kv.fwd.per_element(cx.beta()) > 0 && expanded_kv_elements(cx) > 0;
  return repeated ? expanded_kv_elements(cx) : cx.d().tokens * cx.d().kv_width;
}

Ref qk_prep_fwd(Emitter& em, const Context& cx, Ref qkv) {
  Ref r = qkv;
  const int64_t rope = prep_kernels(cx).rotary.fwd.per_element(cx.beta()) * qk_elements(cx);
  if (uses_rope(cx) && rope > 0) r = em.compute(cx, memop(ComputeCategory::Elementwise, rope), "rotary_embedding", {r});
  const int64_t expand = prep_kernels(cx).repeat_kv.fwd.per_element(cx.beta()) * expanded_kv_elements(cx);
  if (expand > 0) r = em.compute(cx, memop(ComputeCategory::Elementwise, expand), "repeat_kv", {r});
  return r;
}

Ref qk_prep_bwd(Emitter& em, const Context& cx, Ref dqkv) {
  Ref r = dqkv;
  const int64_t expand = prep_kernels(cx).repeat_kv.bwd.per_element(cx.beta()) * expanded_kv_elements(cx);
  if (expand > 0) r = em.compute(cx, memop(ComputeCategory::Elementwise, expand), "repeat_kv_bwd", {r});
  const int64_t rope = prep_kernels(cx).rotary.bwd.per_element(cx.beta()) * qk_elements(cx);
  if (uses_rope(cx) && rope > 0) r = em.compute(cx, memop(ComputeCategory::Elementwise, rope), "rotary_embedding_bwd", {r});
  return r;
}

}  // namespace stepsim::workload::megatron
