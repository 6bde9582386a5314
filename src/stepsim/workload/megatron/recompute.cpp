#include "stepsim/workload/megatron/recompute.hpp"

#include "stepsim/workload/megatron/norms.hpp"

namespace stepsim::workload::megatron {

bool recomputed(const Context& cx, int layer) {
  const auto& tr = cx.job().training;
  if (tr.recompute != spec::Recompute::Full) return false;
  if (tr.recompute_method == spec::RecomputeMethod::Uniform) return true;
  return layer - cx.shape().chunk_first_layer[cx.at.chunk] < tr.recompute_num_layers;
}

bool stores_body_input(const Context& cx, spec::RecomputeModule m) {
  if (cx.at.phase == Phase::Recompute && cx.recomputes(m)) return false;
  return cx.recomputes(m) || !cx.recomputes(spec::RecomputeModule::Layernorm);
}

void layernorm_recompute(Emitter& em, const Context& cx, const char* name, Ref dep) {
  if (!cx.recomputes(spec::RecomputeModule::Layernorm)) return;
  norm_fwd(em, cx.in(Phase::Recompute), name, dep);
}

}  // namespace stepsim::workload::megatron
