#include "stepsim/workload/megatron/context_parallel.hpp"

#include "stepsim/workload/megatron/pytorch_ring.hpp"
#include "stepsim/workload/megatron/ring_steps.hpp"

namespace stepsim::workload::megatron {

namespace {

// The transfer that brings ring step i+1 its K/V blocks (none after the last step): it waits for step i's blocks to
// have arrived (`kv`) and for step i-1 to have freed the buffer it fills (`before`).
Ref ring_next_kv(Emitter& em, const Context& cx, const RingSteps& rs, int i, int64_t kv_block, Ref kv, Ref before,
                 GroupKind ring) {
  if (i + 1 >= rs.n) return Ref{};
  return em.coll(cx, CollType::SendRecv, ring, kv_block * rs.blocks(i + 1), "cp_kv_ring_exchange", kv, before);
}

// Ring attention over `ring` (the CP group, or under a2a+p2p the ranks a apart) with causal load balancing (each rank
// holds chunks r and 2c-1-r): c steps of equal work, the first on the local K/V (the causal halves of both chunks'
// diagonals and one full block), then c - 1 half blocks; the K/V block for step i+1 is sent on to the next CP rank
// while step i computes. Transformer Engine double-buffers the blocks, so that transfer also waits for step i-1 to
// release the buffer it fills.
Ref ring_attention_fwd(Emitter& em, const Context& cx, Ref qkv, double flops, int64_t bytes, int64_t saved,
                       GroupKind ring) {
  const ModelDims& d = cx.d();
  // K and V of this rank's chunk of the ring: its tokens' K/V, or under a2a+p2p a x the tokens with heads / a.
  const int64_t kv_block = cx.beta() * d.tokens * d.kv_width;
  const int c = cx.layout().group_size(ring);
  const int64_t chunk = d.s_loc * (d.c / c);  // tokens per ring rank: the local sequence shard, x a under a2a+p2p
  const RingSteps rs = ring_steps(c);
  Ref kv = qkv, core{}, before{};
  for (int i = 0; i < rs.n; ++i) {
    const int blocks = rs.blocks(i);
    const Ref next = ring_next_kv(em, cx, rs, i, kv_block, kv, before, ring);
    before = core;
    core = em.compute(cx, attention_op(cx, flops / c * blocks, bytes / c * blocks, chunk),
                      i == 0 ? "core_attention_ring_local" : "core_attention_ring_step", {kv}, i == 0 ? saved : 0);
    kv = next;
  }
  return core;
}

// The ring again, c steps of equal work: each step computes with the K/V block that arrived; its dK/dV is added to the
// partial sum that travels with the block and passed on (a small add beside the transfer, not modelled); after the
// c-th pass every dK/dV is back with its owner. The steps do not wait for the dK/dV transfers.
Ref ring_attention_bwd(Emitter& em, const Context& cx, Ref dout, double flops, int64_t bytes, GroupKind ring) {
  const ModelDims& d = cx.d();
  const int64_t kv_block = cx.beta() * d.tokens * d.kv_width;
  const int c = cx.layout().group_size(ring);
  const int64_t chunk = d.s_loc * (d.c / c);
  const RingSteps rs = ring_steps(c);
  Ref kv = dout, dkv{}, core{}, before{};
  for (int i = 0; i < rs.n; ++i) {
    const int blocks = rs.blocks(i);
    const Ref next = ring_next_kv(em, cx, rs, i, kv_block, kv, before, ring);
    before = core;
    core = em.compute(cx, attention_op(cx, 2.5 * flops / c * blocks, 2 * bytes / c * blocks, chunk),
                      "core_attention_ring_bwd", {kv});
    dkv = em.coll(cx, CollType::SendRecv, ring, kv_block * blocks, "cp_dkv_ring_exchange", core, dkv);
    kv = next;
  }
  return dkv;
}

}  // namespace

Ref cp_attention_fwd(Emitter& em, const Context& cx, Ref qkv, double flops, int64_t bytes, int64_t saved) {
  if (cx.f().profile.pytorch_ring) return pytorch_ring_fwd(em, cx, qkv, flops, bytes, saved);
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const int64_t kv_block = beta * d.tokens * d.kv_width;  // this rank's K and V
  switch (cx.job().parallelism.cp_comm_type) {
    case spec::CpCommType::AllGather: {
      // K/V of the other context ranks arrive while the local block is computed.
      Ref kv = em.coll(cx, CollType::AllGather, GroupKind::Cp, kv_block * d.c, "cp_kv_all_gather", qkv);
      em.compute(cx, attention_op(cx, flops / d.c, bytes / d.c, d.s_loc), "core_attention_local", {qkv}, saved);
      return em.compute(cx, attention_op(cx, flops - flops / d.c, bytes - bytes / d.c, d.s), "core_attention_remote",
                        {kv});
    }
    case spec::CpCommType::A2A: {
      // Ulysses: Q, K, V from sequence shards to head shards (all of the sequence, heads / c), attention, and the
      // output back; nothing overlaps the all-to-alls.
      Ref in = em.coll(cx, CollType::AllToAll, GroupKind::Cp, beta * d.tokens * (d.q_width + d.kv_width),
                       "cp_qkv_all_to_all", qkv);
      Ref core = em.compute(cx, attention_op(cx, flops, bytes, d.s), "core_attention", {in}, saved);
      return em.coll(cx, CollType::AllToAll, GroupKind::Cp, beta * d.tokens * d.attn_out_width, "cp_out_all_to_all",
                     core);
    }
    case spec::CpCommType::A2AP2P: {
      // Hierarchical: Ulysses within the a adjacent CP ranks (sequence shards to head shards: a x the sequence, heads
      // / a, the same bytes), then ring attention over the c/a groups on those longer chunks, and the output back.
      Ref in = em.coll(cx, CollType::AllToAll, GroupKind::HcpA2a, beta * d.tokens * (d.q_width + d.kv_width),
                       "cp_qkv_all_to_all", qkv);
      Ref core = ring_attention_fwd(em, cx, in, flops, bytes, saved, GroupKind::HcpRing);
      return em.coll(cx, CollType::AllToAll, GroupKind::HcpA2a, beta * d.tokens * d.attn_out_width,
                     "cp_out_all_to_all", core);
    }
    case spec::CpCommType::P2P:
      break;
  }
  return ring_attention_fwd(em, cx, qkv, flops, bytes, saved, GroupKind::Cp);
}

// Flash-attention backward: 5 matmuls of the forward's 2, i.e. 2.5x its FLOPs, twice its operand traffic.
Ref cp_attention_bwd(Emitter& em, const Context& cx, Ref dout, double flops, int64_t bytes) {
  if (cx.f().profile.pytorch_ring) return pytorch_ring_bwd(em, cx, dout, flops, bytes);
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const int64_t kv_block = beta * d.tokens * d.kv_width;
  switch (cx.job().parallelism.cp_comm_type) {
    case spec::CpCommType::AllGather: {
      Ref kv = em.coll(cx, CollType::AllGather, GroupKind::Cp, kv_block * d.c, "cp_kv_all_gather", dout);
      Ref core = em.compute(cx, attention_op(cx, 2.5 * flops, 2 * bytes, d.s), "core_attention_bwd", {kv});
      return em.coll(cx, CollType::ReduceScatter, GroupKind::Cp, kv_block * d.c, "cp_dkv_reduce_scatter", core);
    }
    case spec::CpCommType::A2A: {
      Ref in = em.coll(cx, CollType::AllToAll, GroupKind::Cp, beta * d.tokens * d.attn_out_width,
                       "cp_out_grad_all_to_all", dout);
      Ref core = em.compute(cx, attention_op(cx, 2.5 * flops, 2 * bytes, d.s), "core_attention_bwd", {in});
      return em.coll(cx, CollType::AllToAll, GroupKind::Cp, beta * d.tokens * (d.q_width + d.kv_width),
                     "cp_qkv_grad_all_to_all", core);
    }
    case spec::CpCommType::A2AP2P: {
      Ref in = em.coll(cx, CollType::AllToAll, GroupKind::HcpA2a, beta * d.tokens * d.attn_out_width,
                       "cp_out_grad_all_to_all", dout);
      Ref dkv = ring_attention_bwd(em, cx, in, flops, bytes, GroupKind::HcpRing);
      return em.coll(cx, CollType::AllToAll, GroupKind::HcpA2a, beta * d.tokens * (d.q_width + d.kv_width),
                     "cp_qkv_grad_all_to_all", dkv);
    }
    case spec::CpCommType::P2P:
      break;
  }
  return ring_attention_bwd(em, cx, dout, flops, bytes, GroupKind::Cp);
}

}  // namespace stepsim::workload::megatron
