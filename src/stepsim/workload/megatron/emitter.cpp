#include "stepsim/workload/megatron/emitter.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stepsim::workload::megatron {

namespace {
bool is_gemm(const Op& op) {
  return op.category == ComputeCategory::Gemm || op.category == ComputeCategory::GroupedGemm;
}
}  // namespace

Op memop(ComputeCategory cat, int64_t bytes) {
  Op op;
  op.category = cat;
  op.bytes = static_cast<uint64_t>(std::max<int64_t>(bytes, 0));
  return op;
}

Op gemm(const Context& cx, int64_t m, int64_t n, int64_t k, int batch) {
  Op op;
  op.category = batch > 1 ? ComputeCategory::GroupedGemm : ComputeCategory::Gemm;
  op.gemm_m = m;
  op.gemm_n = n;
  op.gemm_k = k;
  op.gemm_batch = batch;
  op.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * batch;
  op.bytes = static_cast<uint64_t>(cx.beta() * (m * k + k * n + m * n) * batch);
  op.keep_bf16 = cx.bf16 || cx.job().training.layer_in_bf16(cx.at.layer, cx.job().model.num_layers);
  return op;
}

Op batched_gemm(const Context& cx, int64_t batch, int64_t m, int64_t n, int64_t k) {
  Op op = gemm(cx, m * batch, n, k);
  op.bytes = static_cast<uint64_t>(cx.beta() * batch * (m * k + k * n + m * n));
  op.keep_bf16 = true;
  return op;
}

Op attention_op(const Context& cx, double flops, int64_t bytes, int64_t kv_tokens) {
  Op op = memop(ComputeCategory::Attention, bytes);
  op.flops = flops;
  op.gemm_n = kv_tokens;
  op.gemm_k = (cx.d().d_qk + cx.d().d_v) / 2;
  return op;
}

bool fp8_gemm(const Context& cx, const Op& op) { return cx.f().fp8 && !op.keep_bf16 && is_gemm(op); }

int64_t saved_input_bytes(const Context& cx, const Op& op, int64_t saved) {
  if (saved <= 0 || !fp8_gemm(cx, op) || cx.saving_outputs) return saved;
  return static_cast<int64_t>(std::llround(static_cast<double>(saved / cx.f().act_bytes) * cx.f().fp8_saved_bytes));
}

Ref Emitter::compute(const Context& cx, Op op, std::string_view name, std::vector<Ref> deps, int64_t saved) {
  if (f_.fp8 && is_gemm(op) && !op.keep_bf16 && !cx.wgrad) {
    // A linear layer's A operand (the input forward, the output gradient for dgrad) is cast to fp8 with a transposed
    // copy for the later wgrad: one memory-bound kernel reading β and writing 2 x 1 byte per element (current scaling
    // reads once more for the amax). The weight gradient's operands are those copies: no cast of its own.
    const int64_t elements = op.gemm_m * op.gemm_k * std::max<int32_t>(op.gemm_batch, 1);
    const auto bytes = static_cast<int64_t>(std::llround(f_.fp8_cast_bytes * static_cast<double>(elements)));
    std::string cast(name);
    cast += "_fp8_cast";
    compute(cx, memop(ComputeCategory::Elementwise, bytes), cast, deps);
  }
  op.kind = OpKind::Compute;
  op.stream = compute_stream_;
  tag(cx.at, op);
  // Transformer Engine saves an fp8 linear layer's input for the weight gradient as the fp8 copy it cast (1 byte per
  // element, the columnwise/transposed data), not the bf16 tensor.
  saved = saved_input_bytes(cx, op, saved);
  if (saved > 0 && cx.storing) {
    op.mem_alloc_at_start = saved;
    unit_saved_ += saved;
  }
  if (pending_alloc_ > 0) {
    op.mem_alloc_at_start += pending_alloc_;
    unit_saved_ += pending_alloc_;
    pending_alloc_ = 0;
  }
  if (!pending_deps_.empty()) {
    deps.insert(deps.end(), pending_deps_.begin(), pending_deps_.end());
    pending_deps_.clear();
  }
  return pb_.emit(op, name, deps);
}

Ref Emitter::host_side(const Context& cx, ComputeCategory cat, Stream stream, int64_t bytes, std::string_view name,
                       std::vector<Ref> deps) {
  Op op = memop(cat, bytes);
  op.kind = OpKind::Compute;
  op.stream = stream;
  tag(cx.at, op);
  return pb_.emit(op, name, deps);
}

Ref Emitter::coll(const Context& cx, CollType c, GroupKind g, int64_t bytes, std::string_view name, Ref dep,
                  Ref dep2) {
  if (layout_.group_size(g) <= 1) return dep;
  Op op;
  op.kind = OpKind::Collective;
  op.coll = c;
  op.group = g;
  op.stream = stream_of(g);
  op.bytes = static_cast<uint64_t>(bytes);
  tag(cx.at, op);
  return pb_.emit(op, name, {dep, dep2});
}

Ref Emitter::p2p(const Position& at, uint64_t send_prev, uint64_t send_next, uint64_t recv_prev, uint64_t recv_next,
                 Ref dep, Ref dep2, const char* fixed_name, Stream stream) {
  Op op;
  op.kind = OpKind::P2P;
  op.stream = stream;
  op.group = GroupKind::Pp;
  op.send_prev = send_prev;
  op.send_next = send_next;
  op.recv_prev = recv_prev;
  op.recv_next = recv_next;
  op.bytes = send_prev + send_next;
  tag(at, op);
  op.layer = -1;
  std::string name;
  auto part = [&](bool on, const char* what) {
    if (!on) return;
    if (!name.empty()) name += '_';
    name += what;
  };
  part(send_next, "send_forward");
  part(send_prev, "send_backward");
  part(recv_prev, "recv_forward");
  part(recv_next, "recv_backward");
  if (fixed_name) name = fixed_name;
  return pb_.emit(op, name, {dep, dep2});
}

void Emitter::working_buffer(size_t index, int64_t bytes) {
  Op& op = prog_.ops[index];
  op.mem_alloc_at_start += bytes;
  op.mem_free_at_end += bytes;
  op.mem_transient += bytes;
}

void Emitter::tag(const Position& at, Op& op) {
  order_.on_op();
  op.phase = at.phase;
  op.layer = static_cast<int16_t>(std::min(at.layer, 32767));
  op.microbatch = at.microbatch;
  op.chunk = static_cast<int16_t>(at.chunk);
  op.unit = at.unit;
}

// The sort is stable and each half's keys never decrease in the order it was built, so every op still follows what
// it depends on, on its stream or across streams.
void Emitter::reorder_combined_since(size_t begin) {
  const std::vector<int64_t>& keys = order_.keys();
  for (size_t i = 1; i < keys.size(); ++i) {
    if (i != order_.backward_start() && keys[i] < keys[i - 1]) {
      throw std::logic_error("combined 1F1B step: op '" + prog_.names[prog_.ops[begin + i].name] +
                             "' is tagged before the op built ahead of it");
    }
  }
  pb_.reorder_since(begin, keys);
}

}  // namespace stepsim::workload::megatron
