#include "stepsim/workload/megatron/mtp.hpp"

#include "stepsim/workload/megatron/embedding_head.hpp"
#include "stepsim/workload/megatron/layer.hpp"
#include "stepsim/workload/megatron/linear.hpp"

namespace stepsim::workload::megatron {

Ref mtp_fwd(Emitter& em, const Context& outer, int unit, Ref in) {
  const Context cx = outer.on_layer(unit);
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  Ref e = embedding_fwd(em, cx, in);
  Ref n = em.compute(cx, memop(ComputeCategory::Norm, 4 * beta * d.tokens_sp * d.h), "mtp_enorm_hnorm", {e, in},
                     2 * beta * d.tokens_sp * d.h);
  Ref x = d.sp ? tp_all_gather(em, cx, 2 * beta * d.tokens * d.h, "mtp_eh_proj_all_gather", n) : n;
  Ref p = em.compute(cx, gemm(cx, d.tokens, d.h / d.t, 2 * d.h), "mtp_eh_proj", {x}, 2 * beta * d.tokens * d.h);
  Ref g = em.coll(cx, d.sp ? CollType::ReduceScatter : CollType::AllGather, GroupKind::Tp, beta * d.tokens * d.h,
                  "mtp_eh_proj_output_gather", p);
  const Ref out = layer_fwd(em, cx, unit, g);
  em.node(cx, Piece::Post, false);  // the MTP layer's output layer and loss: Megatron's mtp_post_process node
  return head_fwd(em, cx, out);
}

Ref mtp_bwd(Emitter& em, const Context& outer, int unit, Ref in) {
  const Context cx = outer.on_layer(unit);
  const ModelDims& d = cx.d();
  em.node(cx, Piece::Post, true);
  Ref h = head_bwd(em, cx, in);
  Ref l = layer_bwd(em, cx, unit, h);
  Ref b = column_parallel_bwd(em, cx, "mtp_eh_proj", d.tokens, d.h / d.t, 2 * d.h, l, d.sp);
  Ref n = em.compute(cx, memop(ComputeCategory::Norm, 6 * cx.beta() * d.tokens_sp * d.h), "mtp_enorm_hnorm_bwd", {b});
  return embedding_bwd(em, cx, n);
}

}  // namespace stepsim::workload::megatron
