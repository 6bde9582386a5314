#include "stepsim/workload/megatron/layer.hpp"

#include "stepsim/workload/megatron/attention.hpp"
#include "stepsim/workload/megatron/mlp.hpp"
#include "stepsim/workload/megatron/moe.hpp"
#include "stepsim/workload/megatron/op_sac.hpp"
#include "stepsim/workload/megatron/recompute.hpp"
#include "stepsim/workload/working_memory.hpp"

namespace stepsim::workload::megatron {

Ref layer_fwd(Emitter& em, const Context& outer, int layer, Ref in) {
  Context cx = outer.on_layer(layer);
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  if (recomputed(cx, layer) && cx.at.phase == Phase::Forward) {
    // Full recompute keeps only the checkpoint and re-runs the layer in backward: the layer input, under uniform
    // grouping only the first layer's of each group of recompute_num_layers.
    cx = cx.not_storing();
    const auto& tr = cx.job().training;
    const bool group_start = tr.recompute_method == spec::RecomputeMethod::Block ||
                             (layer - cx.shape().chunk_first_layer[cx.at.chunk]) % tr.recompute_num_layers == 0;
    // --distribute-saved-activations splits the checkpoint over the TP ranks (without SP each holds it whole).
    const int64_t split = tr.distribute_saved_activations ? d.t : 1;
    em.alloc_at_next(group_start ? beta * d.tokens_sp * d.h / split : 0);
  }
  if (cx.f().op_level_sac && cx.at.phase == Phase::Forward) {
    // The policy's saved tensors are held from the block's start; nothing else the forward computes is stored.
    cx = cx.not_storing();
    em.alloc_at_next(op_sac_saved_bytes(cx));
  }
  const Ref a = attention_fwd(em, cx, in);
  const Ref out = cx.job().model.is_moe_layer(layer) ? moe_fwd(em, cx, a) : mlp_fwd(em, cx, a);
  // The layer's working buffers peak at its end, when all it stores is held (working_memory.hpp).
  em.working_buffer(em.next_op() - 1, kLayerForwardWorkingBTH * beta * d.tokens * d.h);
  return out;
}

Ref layer_bwd(Emitter& em, const Context& outer, int layer, Ref in) {
  const Context cx = outer.on_layer(layer);
  const ModelDims& d = cx.d();
  if (recomputed(cx, layer)) {
    // A distributed checkpoint is all-gathered over TP before the layer re-runs (Megatron's gather_split_1d_tensor).
    if (cx.job().training.distribute_saved_activations) {
      in = em.coll(cx, CollType::AllGather, GroupKind::Tp, cx.beta() * d.tokens_sp * d.h, "checkpoint_all_gather", in);
    }
    in = layer_fwd(em, cx.in(Phase::Recompute), layer, in);
  }
  if (cx.f().op_level_sac) op_sac_recompute(em, cx, in);
  // The backward's working buffers peak at its start, before any stored activation of the layer is released.
  const size_t first = em.next_op();
  const Ref m = cx.job().model.is_moe_layer(layer) ? moe_bwd(em, cx, in) : mlp_bwd(em, cx, in);
  em.working_buffer(first, kLayerBackwardWorkingBTH * cx.beta() * d.tokens * d.h + kLayerBackwardWorkspaceBytes);
  em.node(cx, Piece::Pre, true);
  return attention_bwd(em, cx, m);
}

}  // namespace stepsim::workload::megatron
