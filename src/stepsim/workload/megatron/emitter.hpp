#pragma once
// The emitter: the one place ops are appended to a stage's program. It tags each op with the context's position,
// applies the precision policy (fp8 casts, fp8 copies saved for backward) and the memory accounting (what an op
// stores, working buffers), and holds what the next compute op must also carry: waits and allocations issued ahead
// of it (a unit's parameter gathers, a userbuffers all-gather, a checkpoint). Module functions build ops with the
// constructors below and emit them here.
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/workload/megatron/combined_order.hpp"
#include "stepsim/workload/megatron/context.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::workload::megatron {

using Ref = ProgramBuilder::Ref;

// ---- op constructors
Op memop(ComputeCategory cat, int64_t bytes);
// A GEMM of m x k by k x n (batch experts: a grouped GEMM), kept in bf16 where the context or the layer says so.
Op gemm(const Context& cx, int64_t m, int64_t n, int64_t k, int batch = 1);
// One strided-batched kernel (cuBLAS) of the unfused attention: efficiency follows its total size, so the batch is
// folded into m; attention stays in bf16 under fp8.
Op batched_gemm(const Context& cx, int64_t batch, int64_t m, int64_t n, int64_t k);
// A flash-attention kernel of `flops` with `bytes` of operand traffic whose queries each walk up to `kv_tokens` keys
// (the sequence; a ring step's block under context parallelism), at the model's mean head dimension.
Op attention_op(const Context& cx, double flops, int64_t bytes, int64_t kv_tokens);
// A GEMM of a linear layer that runs in fp8 (not kept in bf16: output layer, router, first/last bf16 layers).
bool fp8_gemm(const Context& cx, const Op& op);
// What a GEMM keeps of `saved` bytes of its input for the weight gradient: Transformer Engine and torchao keep an fp8
// linear layer's input as the fp8 copy they cast (fp8_saved_bytes per element), not the activation-dtype tensor.
int64_t saved_input_bytes(const Context& cx, const Op& op, int64_t saved);

class Emitter {
 public:
  Emitter(Program& prog, const RankLayout& layout, const Features& f) : prog_(prog), pb_(prog), layout_(layout), f_(f) {}

  // A compute op tagged with the context's position; stores `saved` bytes for backward (when the context stores).
  Ref compute(const Context& cx, Op op, std::string_view name, std::vector<Ref> deps, int64_t saved = 0);
  // A host<->device copy on the memcpy stream (activation and optimizer offload) or a CPU optimizer step on the
  // compute stream.
  Ref host_side(const Context& cx, ComputeCategory cat, Stream stream, int64_t bytes, std::string_view name,
                std::vector<Ref> deps);
  // A collective on its group's stream (nothing for a group of one: returns `dep`).
  Ref coll(const Context& cx, CollType c, GroupKind g, int64_t bytes, std::string_view name, Ref dep, Ref dep2 = {});
  // A pipeline exchange (batched send/recv) named after its parts unless `fixed_name`.
  Ref p2p(const Position& at, uint64_t send_prev, uint64_t send_next, uint64_t recv_prev, uint64_t recv_next, Ref dep,
          Ref dep2 = {}, const char* fixed_name = nullptr, Stream stream = Stream::Pp);

  // The next compute op also waits for these (a default Ref waits for nothing) / allocates these bytes.
  void wait_at_next(Ref r) { pending_deps_.push_back(r); }
  void alloc_at_next(int64_t bytes) { pending_alloc_ = bytes; }
  // A working buffer held only while op `index` runs: allocated at its start, released at its end.
  void working_buffer(size_t index, int64_t bytes);
  void release_at_last(int64_t bytes) { pb_.back().mem_free_at_end += bytes; }
  void alloc_at_last(int64_t bytes) { pb_.back().mem_alloc_at_start += bytes; }
  size_t next_op() const { return prog_.ops.size(); }
  Ref last(Stream s) const { return pb_.last(s); }

  // Bytes stored by the unit (layer, embedding, head) being built so far.
  void start_unit() { unit_saved_ = 0; }
  int64_t unit_saved() const { return unit_saved_; }

  // The combined 1F1B step's order keys and its nodes.
  CombinedOrder& order() { return order_; }
  void node(const Context& cx, Piece p, bool backward) { order_.node(cx.at.phase, p, backward); }
  // Megatron runs the whole moe_combine node, unpermutation and bias-dropout-add included, on its communication
  // stream under the combined schedule, so the other half's pre-dispatch computation is not queued behind it.
  void combine_node_stream(bool on) { compute_stream_ = on && f_.ep_overlap ? Stream::Ep : Stream::Compute; }
  // Re-issues the ops appended since `begin` in the combined order.
  void reorder_combined_since(size_t begin);

 private:
  void tag(const Position& at, Op& op);
  Program& prog_;
  ProgramBuilder pb_;
  const RankLayout& layout_;
  const Features& f_;
  int64_t unit_saved_ = 0;
  int64_t pending_alloc_ = 0;
  std::vector<Ref> pending_deps_;
  CombinedOrder order_;
  Stream compute_stream_ = Stream::Compute;
};

}  // namespace stepsim::workload::megatron
