#include "stepsim/workload/megatron/stage_builder.hpp"

#include <string>

#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron/embedding_head.hpp"
#include "stepsim/workload/megatron/layer.hpp"
#include "stepsim/workload/megatron/mtp.hpp"
#include "stepsim/workload/megatron/optimizer.hpp"
#include "stepsim/workload/megatron_builder.hpp"

namespace stepsim::workload::megatron {

namespace {
// The layer an op of `unit` is tagged with: none for the embedding and the head.
int layer_tag(int unit) { return unit == kEmbeddingUnit || unit == kHeadUnit ? -1 : unit; }
UnitKind unit_kind(const StageShape& shape, int unit) {
  if (unit == kEmbeddingUnit) return UnitKind::Embedding;
  if (unit == kHeadUnit) return UnitKind::Head;
  return shape.mtp_unit(unit) ? UnitKind::Mtp : UnitKind::Layer;
}
}  // namespace

StageBuilder::StageBuilder(const StageFacts& facts, Program& prog)
    : facts_(facts), prog_(prog), em_(prog, facts.layout, facts.f), grads_(Context{&facts}) {}

Context StageBuilder::context(int layer) const {
  Context cx{&facts_};
  cx.at = step_at_;
  cx.at.layer = layer;
  return cx;
}

Ref StageBuilder::unit_pass(const Context& cx, int unit, Ref x, bool forward) {
  if (unit == kEmbeddingUnit) return forward ? embedding_fwd(em_, cx, x) : embedding_bwd(em_, cx, x);
  if (unit == kHeadUnit) return forward ? head_fwd(em_, cx, x) : head_bwd(em_, cx, x);
  if (facts_.shape.mtp_unit(unit)) return forward ? mtp_fwd(em_, cx, unit, x) : mtp_bwd(em_, cx, unit, x);
  return forward ? layer_fwd(em_, cx, unit, x) : layer_bwd(em_, cx, unit, x);
}

// One pass (forward or backward) of micro-batch `mb` over model chunk `chunk`: per unit, its parameters' readiness,
// the activation offload's copies, the unit's ops, then what its end releases or reduces.
void StageBuilder::pass(int mb, int chunk, Ref in, bool forward) {
  step_at_ = Position{forward ? Phase::Forward : Phase::Backward, -1, mb, chunk};
  grads_.start_pass();
  const std::vector<int> units = facts_.shape.units_of(chunk, forward);
  // The combined 1F1B's slots: the pass's first unit (embedding forward, head backward) before the layers, its last
  // after them.
  const int first = forward ? kEmbeddingUnit : kHeadUnit, last = forward ? kHeadUnit : kEmbeddingUnit;
  Ref x = in;
  int layer_slot = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const int unit = units[i];
    em_.order().start_unit(unit == first  ? CombinedOrder::kBeforeLayersSlot
                           : unit == last ? CombinedOrder::kAfterLayersSlot
                                          : layer_slot++,
                           forward ? Piece::Pre : Piece::Post);
    em_.start_unit();
    const Context before = context(prev_layer_);
    grads_.params_ready(em_, before, units, i);
    if (forward) {
      offload_.before_forward(em_, before, unit);
    } else {
      offload_.before_backward(em_, before, unit, saved_);
    }
    const Context cx = context(layer_tag(unit));
    x = unit_pass(cx.with([&](Context& c) { c.at.unit = unit_kind(facts_.shape, unit); }), unit, x, forward);
    if (forward) {
      saved_.store(mb, unit, em_.unit_saved());
      offload_.after_forward(em_, cx, unit);
    } else {
      // Activations re-created by full recompute are released with the layer's backward too.
      em_.release_at_last(saved_.take(mb, unit) + em_.unit_saved());
      grads_.unit_backward_done(em_, cx, unit);
    }
    prev_layer_ = layer_tag(unit);
  }
  if (forward) grads_.end_forward(chunk);
}

// One pipeline exchange. Batched (Megatron's batch_p2p_comm, the default without overlap_p2p_comm) it is one
// batch_isend_irecv, which PyTorch runs on the pipeline group's own communicator: one op on the pp stream. Under
// overlap_p2p_comm Megatron issues each send and receive alone (_p2p_ops), and PyTorch gives every pair of ranks its
// own communicator and stream for those: the parts toward the next stage (pp) and toward the previous one (pp_prev)
// then queue separately, so a receive still waiting for a late previous stage does not hold back a send to the next
// one. With two stages both peers are one rank, hence one communicator: one op.
StageBuilder::PpRefs StageBuilder::exchange(const PipelineAction& a, uint64_t act) {
  const uint64_t sp = a.send_prev ? act : 0, sn = a.send_next ? act : 0, rp = a.recv_prev ? act : 0,
                 rn = a.recv_next ? act : 0;
  const Ref dep = em_.last(Stream::Compute);
  if (!facts_.job.parallelism.overlap_p2p_comm || facts_.shape.stages <= 2) {
    return PpRefs{em_.p2p(step_at_, sp, sn, rp, rn, dep), Ref{}};
  }
  PpRefs r;
  if (sn || rn) r.next = em_.p2p(step_at_, 0, sn, 0, rn, dep);
  if (sp || rp) r.prev = em_.p2p(step_at_, sp, 0, rp, 0, dep, {}, nullptr, Stream::PpPrev);
  return r;
}

// Builds the forward half, then the backward half (independent of it: Megatron schedules one more warm-up forward for
// that), then issues the step's ops in the combined order (combined_order.hpp).
void StageBuilder::combined_step(const PipelineAction& a, PpRefs blocking, PpRefs fwd_async, PpRefs bwd_async) {
  const size_t begin = prog_.ops.size();
  em_.order().begin();
  for (Ref r : {fwd_async.next, fwd_async.prev, blocking.prev}) em_.wait_at_next(r);
  pass(a.microbatch, a.chunk, blocking.next, true);
  em_.order().begin_backward_half();
  for (Ref r : {bwd_async.next, bwd_async.prev, blocking.prev}) em_.wait_at_next(r);
  pass(a.b_microbatch, a.b_chunk, blocking.next, false);
  em_.order().end();
  em_.reorder_combined_since(begin);
}

void StageBuilder::build() {
  prog_.stage = facts_.shape.stage;
  const auto& tr = facts_.job.training;
  if (tr.distributed_optimizer && tr.overlap_param_gather) {
    step_at_.phase = Phase::Optimizer;
    grads_.issue_overlapped_param_gathers(em_, context(-1));
  }
  const ModelDims& d = facts_.d;
  const uint64_t act = static_cast<uint64_t>(facts_.f.act_bytes * d.tokens_sp * d.h);
  // The exchanges a compute step waits for: the last blocking one, and under overlap_p2p_comm the last asynchronous one
  // of its direction (each pipeline stream is FIFO, so waiting on a later op covers earlier ones).
  PpRefs blocking{}, fwd_async{}, bwd_async{};
  const auto& par = facts_.job.parallelism;
  const StageShape& sh = facts_.shape;
  for (const PipelineAction& a : pipeline_actions(par.schedule, sh.stage, sh.stages, sh.chunks, sh.microbatches,
                                                  par.overlap_p2p_comm, facts_.f.ep_overlap,
                                                  all_forwards_first(facts_.job.training))) {
    switch (a.kind) {
      case PipelineAction::Combined:
        combined_step(a, blocking, fwd_async, bwd_async);
        break;
      case PipelineAction::Forward:
        for (Ref r : {fwd_async.next, fwd_async.prev, blocking.prev}) em_.wait_at_next(r);
        pass(a.microbatch, a.chunk, blocking.next, true);
        break;
      case PipelineAction::Backward:
        for (Ref r : {bwd_async.next, bwd_async.prev, blocking.prev}) em_.wait_at_next(r);
        pass(a.microbatch, a.chunk, blocking.next, false);
        break;
      case PipelineAction::Exchange:
        (a.wait == PipelineAction::Blocking ? blocking : a.wait == PipelineAction::ForwardAsync ? fwd_async : bwd_async) =
            exchange(a, act);
        break;
    }
    check_size();
  }
  finalize();
}

// Finalize (Megatron's finalize_model_grads and optimizer.step): DP reductions not overlapped run now; then the
// gradients of sequence-parallel parameters are all-reduced over TP; then the optimizer; then the distributed
// optimizer's parameter all-gather unless it overlaps the next step's forward.
void StageBuilder::finalize() {
  step_at_ = Position{Phase::Optimizer, -1, -1, 0};
  const Context cx = context(-1);
  const auto& job = facts_.job;
  const auto& tr = job.training;
  const ModelDims& d = facts_.d;
  const StageShape& sh = facts_.shape;
  grads_.finish_grad_reduction(em_, cx);
  // Tied word embeddings over several stages: the first stage's embedding and the last stage's copy in the output
  // layer all-reduce their fp32 gradients (Megatron's _allreduce_embedding_grads, on main_grad, after the DP sync).
  // Between two ranks that is an exchange of the whole gradient each way (a 2-rank ring all-reduce moves S per rank,
  // as a send/recv of S does), on the pipeline ring's wrap-around link between last and first stage.
  Ref tied{};
  if (job.model.tie_embeddings && sh.stages > 1 && (sh.stage == 0 || sh.stage == sh.stages - 1)) {
    const uint64_t S = static_cast<uint64_t>(d.vocab_pad * d.h / d.t * facts_.f.grad_bytes);
    const char* name = "tied_embedding_grad_all_reduce";
    const Ref grads = em_.last(Stream::Compute), synced = em_.last(Stream::Dp);
    tied = sh.stage == 0 ? em_.p2p(step_at_, S, 0, S, 0, grads, synced, name)
                         : em_.p2p(step_at_, 0, S, 0, S, grads, synced, name);
  }
  // Gradient clipping (and logging) needs the global gradient norm: one fp32 all-reduced over the model-parallel
  // ranks, and over the data-parallel ones too when the optimizer states (hence the gradients it reads) are sharded;
  // fp16 loss scaling all-reduces its found-inf flag the same way. Latency only, but every stage's optimizer waits for
  // the slowest stage.
  Ref norm = em_.last(Stream::Compute);
  const int stats = tr.precision == spec::Precision::Fp16 ? 2 : 1;
  for (int k = 0; k < stats; ++k) {
    const char* what = k == 0 ? "grad_norm_all_reduce" : "found_inf_all_reduce";
    norm = em_.coll(cx, CollType::AllReduce, GroupKind::Tp, 4, what, norm, k == 0 ? tied : Ref{});
    norm = em_.coll(cx, CollType::AllReduce, GroupKind::Pp, 4, what, norm, em_.last(Stream::Dp));
    if (tr.distributed_optimizer) norm = em_.coll(cx, CollType::AllReduce, GroupKind::Dp, 4, what, norm);
  }
  const int64_t dense = grads_.dense_params(), expert = grads_.expert_params();
  prog_.dense_parameters = dense;
  for (int c = 0; c < sh.chunks; ++c) {
    for (int l = sh.chunk_first_layer[c]; l < sh.chunk_first_layer[c] + sh.chunk_layers[c]; ++l) {
      if (!tr.layer_in_bf16(l, job.model.num_layers)) continue;
      prog_.bf16_layer_parameters += d.layer_params(job.model.is_moe_layer(l));
    }
  }
  prog_.expert_parameters = expert;
  const int64_t dp = facts_.layout.group_size(GroupKind::Dp), edp = facts_.layout.group_size(GroupKind::Edp);
  const int64_t opt_params = tr.distributed_optimizer ? dense / dp + expert / edp : dense + expert;
  std::vector<Ref> opt_deps{em_.last(Stream::Dp), em_.last(Stream::Tp), norm, tied};
  const Ref opt = tr.optimizer_offload ? offloaded_optimizer_step(em_, cx, opt_params, std::move(opt_deps))
                                       : gpu_optimizer_step(em_, cx, opt_params, opt_deps);
  grads_.gather_params_after_step(em_, cx, opt);
}

void StageBuilder::check_size() const {
  if (prog_.ops.size() > kMaxOpsPerProgram) {
    throw InputError(facts_.job.source + ": the job needs more than " + std::to_string(kMaxOpsPerProgram) +
                     " ops per rank (micro-batches x layers too large); reduce training.global_batch_size");
  }
}

}  // namespace stepsim::workload::megatron
