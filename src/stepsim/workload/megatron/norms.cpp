#include "stepsim/workload/megatron/norms.hpp"

namespace stepsim::workload::megatron {

namespace {
int64_t hidden_elements(const Context& cx) { return cx.d().tokens_sp * cx.d().h; }
}  // namespace

Ref norm_fwd(Emitter& em, const Context& cx, const char* name, Ref in) {
  const int64_t beta = cx.beta();
  return em.compute(cx, memop(ComputeCategory::Norm, 2 * beta * hidden_elements(cx)), name, {in},
                    beta * hidden_elements(cx));
}

Ref norm_bwd(Emitter& em, const Context& cx, const char* name, Ref in) {
  return em.compute(cx, memop(ComputeCategory::Norm, 3 * cx.beta() * hidden_elements(cx)), name, {in});
}

Ref bias_dropout_add_fwd(Emitter& em, const Context& cx, const char* name, std::vector<Ref> deps) {
  return em.compute(cx, memop(ComputeCategory::Elementwise, 4 * cx.beta() * hidden_elements(cx)), name, std::move(deps),
                    cx.f().mask_bytes * hidden_elements(cx));
}

Ref bias_dropout_add_bwd(Emitter& em, const Context& cx, const char* name, Ref in) {
  return em.compute(cx, memop(ComputeCategory::Elementwise, 3 * cx.beta() * hidden_elements(cx)), name, {in});
}

}  // namespace stepsim::workload::megatron
