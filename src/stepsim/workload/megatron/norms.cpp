#include "stepsim/workload/megatron/norms.hpp"

namespace stepsim::workload::megatron {

namespace {
int64_t hidden_elements(const Context& cx) { return cx.d().tokens_sp * cx.d().h; }
const LayerKernels& norm_site_kernels(const Context& cx, NormSite site = NormSite::Layer) {
  return site == NormSite::Final ? cx.f().profile.head_kernels : cx.f().profile.kernels;
}
ComputeCategory norm_category(const Context& cx, NormSite site) {
  return norm_site_kernels(cx, site).norm_fused ? ComputeCategory::Norm : ComputeCategory::Elementwise;
}
}  // namespace

Ref norm_fwd(Emitter& em, const Context& cx, const char* name, Ref in, NormSite site) {
  const int64_t beta = cx.beta();
  const int64_t bytes = norm_site_kernels(cx, site).norm.fwd.per_element(beta) * hidden_elements(cx);
  return em.compute(cx, memop(norm_category(cx, site), bytes), name, {in}, beta * hidden_elements(cx));
}

Ref norm_bwd(Emitter& em, const Context& cx, const char* name, Ref in, NormSite site) {
  const int64_t bytes = norm_site_kernels(cx, site).norm.bwd.per_element(cx.beta()) * hidden_elements(cx);
  return em.compute(cx, memop(norm_category(cx, site), bytes), name, {in});
}

Ref bias_dropout_add_fwd(Emitter& em, const Context& cx, const char* name, std::vector<Ref> deps) {
  return em.compute(cx,
                    memop(ComputeCategory::Elementwise,
                          norm_site_kernels(cx).residual_add.fwd.per_element(cx.beta()) * hidden_elements(cx)),
                    name, std::move(deps), cx.f().mask_bytes * hidden_elements(cx));
}

Ref bias_dropout_add_bwd(Emitter& em, const Context& cx, const char* name, Ref in) {
  return em.compute(cx,
                    memop(ComputeCategory::Elementwise,
                          norm_site_kernels(cx).residual_add.bwd.per_element(cx.beta()) * hidden_elements(cx)),
                    name, {in});
}

}  // namespace stepsim::workload::megatron
