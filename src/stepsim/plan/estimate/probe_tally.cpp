#include "stepsim/plan/estimate/probe_tally.hpp"

#include <utility>

#include "stepsim/plan/estimate/probe_waits.hpp"

namespace stepsim::plan::estimate {

using workload::Op;

bool is_embedding_op(const Op& op) {
  return op.unit == workload::UnitKind::Embedding;
}

ProbeTally::ProbeTally(const workload::Program& prog, const sim::StreamReplay& rp, int layers, ProbeSelection selection)
    : prog_(prog), rp_(rp), layers_(layers), selection_(selection) {
  out_.fwd.assign(layers, {});
  out_.bwd.assign(layers, {});
  out_.stored_bytes.assign(layers, 0);
  out_.layer_forward_flops.assign(layers, 0);
}

bool ProbeTally::costed(const Op& op) const {
  if (op.microbatch < 0) return false;  // optimizer tail and parameter gathers: planned per stage
  if (selection_.skip_combined_pair && in_combined_pair(op)) return false;
  return selection_.costed_microbatch < 0 || op.microbatch == selection_.costed_microbatch;
}

// Multi-token prediction layers (index >= num_layers) run on the last stage: charged with the head.
LayerCosts::Part& ProbeTally::part_of(const Op& op, bool fwd, bool decoder_layer) {
  if (decoder_layer) return fwd ? out_.fwd[op.layer] : out_.bwd[op.layer];
  if (is_embedding_op(op)) return fwd ? out_.first_fwd : out_.first_bwd;
  return fwd ? out_.last_fwd : out_.last_bwd;
}

void ProbeTally::add_stored(const Op& op, bool decoder_layer) {
  const double stored = static_cast<double>(op.mem_alloc_at_start) - static_cast<double>(op.mem_free_at_end);
  stored_total_ += stored;
  if (decoder_layer) out_.stored_bytes[op.layer] += stored;
  else if (before_layers_) out_.first_stored += stored;
  else out_.last_stored += stored;
}

// A kernel on the compute stream: its time, and the stream's idle time before it by what it waited for. (A host copy
// runs beside compute: activation offload.)
void ProbeTally::add_kernel(LayerCosts::Part& part, size_t i, bool fwd) {
  const Op& op = prog_.ops[i];
  if (op.kind != workload::OpKind::Compute || op.stream != workload::Stream::Compute) return;
  const double dur = rp_.end_s[i] - rp_.start_s[i], start = rp_.start_s[i], prev_free = rp_.prev_free_s[i];
  const int blocker = rp_.blocker[i];
  part.compute_s += dur;
  if (fwd) {
    out_.forward_flops += op.flops;
    if (op.layer >= 0 && op.layer < layers_) out_.layer_forward_flops[op.layer] += op.flops;
  }
  if (start <= prev_free || blocker == sim::kStreamBlocker) return;
  charge_compute_wait(part, prog_, blocker, start - prev_free);
}

void ProbeTally::close_sync() {
  if (at_sync_ == nullptr) return;
  at_sync_->pre_issue_s = at_sync_->issue_s;
  at_sync_->pre_gpu_s = at_sync_->gpu();
  at_sync_ = nullptr;
}

void ProbeTally::add(size_t i) {
  close_sync();
  const Op& op = prog_.ops[i];
  if (!costed(op)) return;
  const bool fwd = op.phase == workload::Phase::Forward;
  const bool decoder_layer = op.layer >= 0 && op.layer < layers_;
  if (op.layer >= 0) before_layers_ = false;
  LayerCosts::Part& part = part_of(op, fwd, decoder_layer);
  if (fwd) add_stored(op, decoder_layer);
  part.issue_s += static_cast<double>(op.host_ns) * 1e-9;
  if (op.host_sync && !part.syncs) at_sync_ = &part, part.syncs = true;
  add_kernel(part, i, fwd);
}

LayerCosts ProbeTally::finish() {
  close_sync();
  auto whole_before_sync = [](LayerCosts::Part& x) {
    if (!x.syncs) x.pre_issue_s = x.issue_s, x.pre_gpu_s = x.gpu();
  };
  for (LayerCosts::Part* x : {&out_.first_fwd, &out_.first_bwd, &out_.last_fwd, &out_.last_bwd}) whole_before_sync(*x);
  for (LayerCosts::Part& x : out_.fwd) whole_before_sync(x);
  for (LayerCosts::Part& x : out_.bwd) whole_before_sync(x);
  return std::move(out_);
}

}  // namespace stepsim::plan::estimate
