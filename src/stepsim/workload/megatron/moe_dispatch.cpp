#include "stepsim/workload/megatron/moe_dispatch.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "stepsim/workload/moe_routing.hpp"

namespace stepsim::workload::megatron {

namespace {

// Permute forward and unpermute backward: rows gathered by index (read + write: `rows` counts both). Unfused, the
// unpermute's backward also multiplies the gathered gradient by the routing probabilities and reduces the gradient of
// the probabilities (reading the expert output again): three passes over the rows, as measured on the H100
// (data/measurements/h100-sxm/moe_ops.csv: 2.5-2.8 passes at the elementwise rate).
Op permute_gather(const Context& cx, int64_t rows, bool unpermute_backward) {
  const bool unfused = unpermute_backward && !cx.job().model.moe->permute_fusion;
  return memop(ComputeCategory::Elementwise, (unfused ? 3 : 1) * cx.beta() * rows * cx.d().h);
}

// Unpermute forward and permute backward: rows added into the token order. Unfused (Megatron-Core's default) these are
// atomic scatter_add_ / index_add_ kernels; Transformer Engine's fused kernels gather and sum instead.
Op permute_scatter(const Context& cx, int64_t rows) {
  return memop(cx.job().model.moe->permute_fusion ? ComputeCategory::Elementwise : ComputeCategory::ScatterAdd,
               cx.beta() * rows * cx.d().h);
}

// The alltoall dispatcher sorts the rows it received by local expert (and back before the combine) when a rank holds
// more than one expert: a copy of every row each way (split + cat unfused; Transformer Engine's sort-chunks fused).
bool sorts_chunks(const Context& cx) {
  const auto& moe = *cx.job().model.moe;
  return moe.token_dispatcher == spec::TokenDispatcher::AllToAll && moe.num_experts / cx.d().e > 1;
}

// Message size S of one EP all-to-all. The alltoall dispatcher sends one copy per routed expert (the permuted rows).
// DeepEP (flex) sends a token once per destination rank inside a node and, across nodes, once per destination node
// (forwarded over NVLink there): S is set so that the all-to-all's inter-node share, (n - K)/n S, carries the expected
// remote nodes a token reaches (or, within one node, its share (n - 1)/n S the remote ranks); moe_routing.hpp.
int64_t ep_all_to_all_bytes(const Context& cx) {
  const ModelDims& d = cx.d();
  const MoeTokens mt = moe_tokens(cx);
  const int64_t per_expert = cx.beta() * mt.routed_sp * d.h;
  const auto& moe = *cx.job().model.moe;
  if (moe.token_dispatcher != spec::TokenDispatcher::Flex) return per_expert;
  const RankLayout& layout = cx.layout();
  const auto g = normalized(
      layout.geometry(GroupKind::Ep, layout.group_id(GroupKind::Ep, layout.rank_of({0, 0, 0, cx.shape().stage}))));
  const ExpertRouting r{moe.num_experts, moe.topk, moe.router_num_groups, moe.router_group_topk};
  double copies = 0;  // per token, in units of the all-to-all's message
  if (g.nodes > 1) {
    const double remote_nodes = expected_blocks_reached(r, g.nodes) * (g.nodes - 1) / g.nodes;
    copies = remote_nodes * g.ranks / (g.ranks - g.ranks_per_node);
  } else {
    copies = expected_blocks_reached(r, g.ranks);
  }
  const double bytes = static_cast<double>(cx.beta() * d.tokens_sp * d.h) * cx.f().expert_load * copies;
  return std::min(per_expert, static_cast<int64_t>(std::llround(bytes)));
}

// Megatron-Core's dropless dispatchers bring the tokens-per-expert counts to the host once per forward (alltoall: the
// all-to-all's split sizes, `cuda_sync_point`; allgather: the grouped GEMM's per-expert sizes; flex: DeepEP's CPU wait
// for the received count). The host waits for the device there, and the GPU then idles while the host issues the
// kernels that follow, until it is ahead again. Measured on an H100 with eager PyTorch at one EP rank's share of
// Qwen3-30B-A3B and Mixtral 8x7B (data/measurements/h100-sxm/host.csv, eager_sync - eager per layer): 40-120 us
// without autograd, 110-150 us with it; Megatron's dispatcher runs more Python after the sync, so 100 us is at the low
// end. Buffers padded to the capacity have static sizes: no synchronisation.
Ref moe_host_sync(Emitter& em, const Context& cx, Ref dep, Ref dep2) {
  if (cx.job().model.moe->pad_to_capacity) return dep;
  Op stall;
  stall.category = ComputeCategory::Host;
  stall.duration_ns = std::llround(cx.f().profile.moe_host_sync_us * 1e3);
  stall.host_sync = true;  // the host issue model waits here for the GPU (cost/host_issue.hpp)
  return em.compute(cx, stall, "moe_host_sync", {dep, dep2});  // a default Ref (count 0) waits for nothing
}

// The allgather dispatcher: every token of the expert-tensor x expert group gathered (TP stage, then EP: the bytes of
// one all-gather over both), the local experts' tokens picked out.
Ref allgather_to_experts(Emitter& em, const Context& cx, Ref dep, bool backward) {
  const ModelDims& d = cx.d();
  const MoeTokens mt = moe_tokens(cx);
  Ref x = mt.tp_stage ? em.coll(cx, CollType::AllGather, mt.etp, cx.beta() * d.tokens_sp * d.et * d.h,
                                backward ? "moe_tp_all_gather_bwd" : "moe_tp_all_gather", dep)
                      : dep;
  x = em.coll(cx, CollType::AllGather, GroupKind::Ep, cx.beta() * mt.gathered * d.h,
              backward ? "moe_combine_all_gather_bwd" : "moe_dispatch_all_gather", x);
  if (!backward) x = moe_host_sync(em, cx, x, {});
  return em.compute(cx, permute_gather(cx, mt.gathered + mt.routed, backward),
                    backward ? "token_unpermute_bwd" : "token_permute", {x});
}

// Its way back: the reduce-scatter over the expert-tensor x expert group also sums the TP-split experts' partial
// outputs.
Ref allgather_from_experts(Emitter& em, const Context& cx, Ref dep, bool backward) {
  const ModelDims& d = cx.d();
  const MoeTokens mt = moe_tokens(cx);
  Ref x = em.compute(cx, permute_scatter(cx, mt.routed + mt.gathered), backward ? "token_permute_bwd" : "token_unpermute",
                     {dep});
  x = em.coll(cx, CollType::ReduceScatter, GroupKind::Ep, cx.beta() * mt.gathered * d.h,
              backward ? "moe_dispatch_reduce_scatter_bwd" : "moe_combine_reduce_scatter", x);
  return mt.tp_stage ? em.coll(cx, CollType::ReduceScatter, mt.etp, cx.beta() * d.tokens_sp * d.et * d.h,
                               backward ? "moe_tp_reduce_scatter_bwd" : "moe_tp_reduce_scatter", x)
                     : x;
}

}  // namespace

MoeTokens moe_tokens(const Context& cx) {
  const ModelDims& d = cx.d();
  const int64_t k = cx.job().model.moe->topk;
  const double cf = cx.f().expert_load;
  MoeTokens t;
  t.routed_sp = static_cast<int64_t>(static_cast<double>(d.tokens_sp * k) * cf);
  // The expert-tensor group's ranks hold different tokens (their sequence shards under SP, or other data-parallel
  // ranks' tokens when it is not the TP group), gathered before the experts; with expert_tensor = tensor and no SP
  // every rank of the group already holds the same tokens. With expert tensor parallel size 1 (parallel folding) each
  // rank's experts see only what the dispatch brought.
  t.etp = d.et == d.t ? GroupKind::Tp : GroupKind::Etp;
  t.tp_stage = d.et > 1 && (d.sp || d.et != d.t);
  const int64_t group_tokens = d.tokens_sp * (t.tp_stage ? d.et : 1);
  t.routed = static_cast<int64_t>(static_cast<double>(group_tokens * k) * cf);
  t.gathered = group_tokens * d.e;
  return t;
}

// alltoall: permute the routed copies, all-to-all over the expert group, all-gather over the expert-tensor group.
// allgather: allgather_to_experts. flex (DeepEP): the fused all-to-all (its receiver permutes in moe_expert_order).
Ref moe_to_experts(Emitter& em, const Context& cx, Ref dep, bool backward) {
  const auto type = cx.job().model.moe->token_dispatcher;
  if (type == spec::TokenDispatcher::AllGather) return allgather_to_experts(em, cx, dep, backward);
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const MoeTokens mt = moe_tokens(cx);
  const std::string sfx = backward ? "_bwd" : "";
  const char* permute = backward ? "token_unpermute_bwd" : "token_permute";
  Ref x = dep;
  // The alltoall dispatcher gathers every rank's tokens-per-expert counts over the expert group for the split sizes;
  // padded to the capacity, every split is the capacity and nothing is gathered (MoEAlltoAllTokenDispatcher.preprocess
  // returns before the gather when drop_and_pad).
  const Ref counts = type == spec::TokenDispatcher::AllToAll && !backward && !cx.job().model.moe->pad_to_capacity
                         ? em.coll(cx, CollType::AllGather, GroupKind::Ep,
                                   8 * int64_t{cx.job().model.moe->num_experts} * d.e, "moe_token_count_all_gather", dep)
                         : dep;
  if (type == spec::TokenDispatcher::AllToAll) {
    x = em.compute(cx, permute_gather(cx, 2 * mt.routed_sp, backward), permute, {dep});
  }
  if (!backward) x = moe_host_sync(em, cx, x, counts);
  em.node(cx, backward ? Piece::Combine : Piece::Dispatch, backward);
  x = em.coll(cx, CollType::AllToAll, GroupKind::Ep, ep_all_to_all_bytes(cx),
              backward ? "moe_combine_all_to_all_bwd" : "moe_dispatch_all_to_all", x);
  em.combine_node_stream(false);
  return mt.tp_stage ? em.coll(cx, CollType::AllGather, mt.etp, beta * mt.routed * d.h, "moe_tp_all_gather" + sfx, x)
                     : x;
}

Ref moe_from_experts(Emitter& em, const Context& cx, Ref dep, bool backward) {
  const auto type = cx.job().model.moe->token_dispatcher;
  if (type == spec::TokenDispatcher::AllGather) return allgather_from_experts(em, cx, dep, backward);
  const ModelDims& d = cx.d();
  const MoeTokens mt = moe_tokens(cx);
  const std::string sfx = backward ? "_bwd" : "";
  em.node(cx, backward ? Piece::Dispatch : Piece::Combine, backward);
  Ref x = d.et == 1     ? dep
          : mt.tp_stage ? em.coll(cx, CollType::ReduceScatter, mt.etp, cx.beta() * mt.routed * d.h,
                                  "moe_tp_reduce_scatter" + sfx, dep)
                        : em.coll(cx, CollType::AllReduce, GroupKind::Tp, cx.beta() * mt.routed * d.h,
                                  "moe_tp_all_reduce" + sfx, dep);
  x = em.coll(cx, CollType::AllToAll, GroupKind::Ep, ep_all_to_all_bytes(cx),
              backward ? "moe_dispatch_all_to_all_bwd" : "moe_combine_all_to_all", x);
  em.node(cx, backward ? Piece::Pre : Piece::Combine, backward);  // the permutation's backward: pre-dispatch node
  if (!backward) em.combine_node_stream(true);  // until the layer's bias-dropout-add (moe_fwd)
  if (type == spec::TokenDispatcher::Flex) return x;
  return em.compute(cx, permute_scatter(cx, 2 * mt.routed_sp), backward ? "token_permute_bwd" : "token_unpermute", {x});
}

// flex permutes the received tokens into expert order; alltoall sorts the received rows by local expert when the rank
// holds more than one. Megatron-Core issues the shared expert's fc1 (under the overlap) before this.
Ref moe_expert_order(Emitter& em, const Context& cx, Ref x, bool backward) {
  const MoeTokens mt = moe_tokens(cx);
  if (cx.job().model.moe->token_dispatcher == spec::TokenDispatcher::Flex)
    return em.compute(cx, permute_gather(cx, 2 * mt.routed, backward), backward ? "token_unpermute_bwd" : "token_permute",
                      {x});
  if (!sorts_chunks(cx)) return x;
  return em.compute(cx, memop(ComputeCategory::Elementwise, 2 * cx.beta() * mt.routed * cx.d().h),
                    backward ? "tokens_unsort_chunks_bwd" : "tokens_sort_chunks", {x});
}

// The reverse of moe_expert_order (flex unpermutes locally; alltoall restores the received order).
Ref moe_token_order(Emitter& em, const Context& cx, Ref x, bool backward) {
  const MoeTokens mt = moe_tokens(cx);
  if (cx.job().model.moe->token_dispatcher == spec::TokenDispatcher::Flex)
    return em.compute(cx, permute_scatter(cx, 2 * mt.routed), backward ? "token_permute_bwd" : "token_unpermute", {x});
  if (!sorts_chunks(cx)) return x;
  return em.compute(cx, memop(ComputeCategory::Elementwise, 2 * cx.beta() * mt.routed * cx.d().h),
                    backward ? "tokens_sort_chunks_bwd" : "tokens_unsort_chunks", {x});
}

}  // namespace stepsim::workload::megatron
