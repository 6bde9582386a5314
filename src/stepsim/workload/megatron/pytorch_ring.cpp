#include "stepsim/workload/megatron/pytorch_ring.hpp"

#include "stepsim/workload/megatron/qk_prep.hpp"
#include "stepsim/workload/megatron/ring_steps.hpp"

namespace stepsim::workload::megatron {

namespace {

// Bytes per element of the eager kernels around each ring step, read from the templated ring attention
// (_templated_ring_attention, its _SDPAMerger and _templated_ring_attention_backward) with β the activation size and
// fp32 accumulators. The slowest rank is costed: the last, whose later steps see all its queries (full merges) and
// the first half of each K/V block (partial dK/dV updates). data/measurements/h200-sxm/cp_ring.csv measures them.
struct RingKernelBytes {
  int64_t beta;
  // torch.cat of K and V into the buffer handed to the rotation (every step but the last), per K/V element.
  int64_t kv_concat() const { return 2 * beta; }
  // A later step's output merged into the fp32 running output, per output element: the block's output cast to fp32
  // (β+4), out - block_out (12), times sigmoid(block_lse - lse) (8), out minus that (12).
  int64_t merge() const { return beta + 36; }
  // The merged output cast back at the end, per output element.
  int64_t cast_back() const { return 4 + beta; }
  // An fp32 accumulator plus a β gradient: read both, write the sum.
  int64_t accumulate() const { return 8 + beta; }
  // dK/dV of a later step: added into the first half of the fp32 accumulators, then the halves concatenated again
  // (_partial_update), per K/V element.
  int64_t partial_accumulate() const { return accumulate() / 2 + 8; }
  // The fp32 dK/dV concatenated into the buffer passed on, per K/V element.
  int64_t grad_concat() const { return 8; }
};

struct RingShape {
  int c;
  RingSteps rs;
  int64_t kv;   // K and V elements this rank holds (expanded where repeated)
  int64_t out;  // output elements (tokens x heads x d_v)
  int64_t q;    // query elements (tokens x heads x d_qk)
};

RingShape ring_shape(const Context& cx) {
  const ModelDims& d = cx.d();
  const int c = cx.layout().group_size(GroupKind::Cp);
  return RingShape{c, ring_steps(c), attention_kv_elements(cx), d.tokens * d.attn_out_width, d.tokens * d.q_width};
}

Op eager(int64_t bytes) { return memop(ComputeCategory::Elementwise, bytes); }

// The ring steps of group i that concatenate K/V for the rotation: all but the last step of the ring; traced into a
// compiled graph only the first, whose concatenation the all-gather reads (the rotater ignores the later ones).
int concatenating(const RingShape& r, int i, bool traced) {
  if (traced) return i == 0 && r.c > 1 ? 1 : 0;
  return r.rs.blocks(i) - (i + 1 == r.rs.n ? 1 : 0);
}

}  // namespace

Ref pytorch_ring_fwd(Emitter& em, const Context& cx, Ref qkv, double flops, int64_t bytes, int64_t saved) {
  const RingShape r = ring_shape(cx);
  const RingKernelBytes k{cx.beta()};
  const int64_t chunk = cx.d().s_loc;
  // Every rank's K/V, gathered once: eager, while the first step computes on the local block; traced, before it.
  const Ref all_kv = em.coll(cx, CollType::AllGather, GroupKind::Cp, cx.beta() * r.kv * r.c, "cp_kv_all_gather", qkv);
  const bool traced = cx.f().profile.ring_traced;
  Ref merged{};
  for (int i = 0; i < r.rs.n; ++i) {
    const int blocks = r.rs.blocks(i);
    const int later = blocks - (i == 0 ? 1 : 0);        // blocks merged into the running output
    const int handed_on = concatenating(r, i, traced);  // steps that concatenate K/V for the rotation
    std::vector<Ref> after{i == 0 ? qkv : all_kv};
    if (traced && i == 0) after.push_back(all_kv);
    const Ref core = em.compute(cx, attention_op(cx, flops / r.c * blocks, bytes / r.c * blocks, chunk),
                                i == 0 ? "core_attention_ring_local" : "core_attention_ring_step", after,
                                i == 0 ? saved : 0);
    merged = em.compute(cx, eager(handed_on * k.kv_concat() * r.kv + later * k.merge() * r.out), "cp_ring_merge",
                        {core});
  }
  return em.compute(cx, eager(k.cast_back() * r.out), "cp_ring_output_cast", {merged});
}

Ref pytorch_ring_bwd(Emitter& em, const Context& cx, Ref dout, double flops, int64_t bytes) {
  const RingShape r = ring_shape(cx);
  const RingKernelBytes k{cx.beta()};
  const int64_t chunk = cx.d().s_loc;
  em.compute(cx, eager(4 * (r.q + r.kv)), "cp_ring_grad_zeros", {dout});  // fp32 dQ, dK, dV accumulators
  const Ref all_kv = em.coll(cx, CollType::AllGather, GroupKind::Cp, cx.beta() * r.kv * r.c, "cp_kv_all_gather", dout);
  const bool traced = cx.f().profile.ring_traced;
  Ref dkv{};
  for (int i = 0; i < r.rs.n; ++i) {
    const int blocks = r.rs.blocks(i);
    const int later = blocks - (i == 0 ? 1 : 0);
    const int handed_on = concatenating(r, i, traced);
    std::vector<Ref> after{i == 0 ? dout : all_kv};
    if (traced) after.push_back(i == 0 ? all_kv : dkv);  // the gather, then each exchange, waited where issued
    const Ref core = em.compute(cx, attention_op(cx, 2.5 * flops / r.c * blocks, 2 * bytes / r.c * blocks, chunk),
                                "core_attention_ring_bwd", after);
    // The step's dK/dV join the accumulators that arrived from the previous rank, which go on in fp32.
    const int64_t acc = (handed_on * k.kv_concat() + (blocks - later) * k.accumulate() +
                         later * k.partial_accumulate() + blocks * k.grad_concat()) * r.kv +
                        blocks * k.accumulate() * r.q;
    const Ref summed = em.compute(cx, eager(acc), "cp_ring_grad_accumulate", {core, dkv});
    dkv = em.coll(cx, CollType::SendRecv, GroupKind::Cp, 4 * r.kv * blocks, "cp_dkv_ring_exchange", summed);
  }
  return em.compute(cx, eager(k.cast_back() * (r.q + r.kv)), "cp_ring_grad_cast", {dkv});
}

}  // namespace stepsim::workload::megatron
