#include "stepsim/workload/megatron/grad_sync.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "stepsim/workload/dp_buckets.hpp"
#include "stepsim/workload/megatron/qk_prep.hpp"
#include "stepsim/workload/megatron/recompute.hpp"
#include "stepsim/workload/megatron/unit_params.hpp"

namespace stepsim::workload::megatron {

GradSync::GradSync(const Context& cx) {
  chunk_started_.assign(static_cast<size_t>(cx.shape().chunks), false);
  plan_buckets(cx);
  gathers_.assign(buckets_.size(), Ref{});
}

void GradSync::plan_buckets(const Context& cx) {
  const ModelDims& d = cx.d();
  const StageShape& sh = cx.shape();
  const double limit = dp_bucket_limit(cx.job().training, cx.layout().group_size(GroupKind::Dp));
  for (int c = sh.chunks - 1; c >= 0; --c) {
    // The chunk's gradient units in backward order (unit ids fall along it, so a bucket's last unit is also its
    // earliest in forward order).
    std::vector<int> ids;
    std::vector<UnitParams> params;
    auto unit = [&](int id, int64_t dense, int64_t expert) {
      ids.push_back(id);
      params.push_back({static_cast<double>(dense), static_cast<double>(expert)});
    };
    if (sh.last_model_chunk(c)) {
      unit(kHeadUnit, d.params_output + d.params_final_norm, 0);
      for (int k = sh.mtp_layers - 1; k >= 0; --k) {
        const int id = sh.num_layers + k;
        unit(id, unit_params(cx, id, false), unit_params(cx, id, true));
      }
    }
    for (int i = sh.chunk_layers[c] - 1; i >= 0; --i) {
      const int layer = sh.chunk_first_layer[c] + i;
      const bool moe = cx.job().model.is_moe_layer(layer);
      unit(layer, d.layer_params_dense(moe), moe ? d.params_moe_experts : 0);
    }
    if (sh.first_model_chunk(c)) unit(kEmbeddingUnit, d.params_embedding, 0);
    const bool bucketed = !cx.f().profile.buckets_first_chunk_only || (sh.stage == 0 && c == 0);
    const double chunk_limit = bucketed ? limit : std::numeric_limits<double>::infinity();
    for (const DpBucketSpan& b : form_dp_buckets(params, chunk_limit)) {
      buckets_.push_back({static_cast<int64_t>(b.params), b.expert ? GroupKind::Edp : GroupKind::Dp, c, ids[b.last]});
    }
  }
}

void GradSync::issue_overlapped_param_gathers(Emitter& em, const Context& cx) {
  for (size_t i = buckets_.size(); i-- > 0;) {
    gathers_[i] = em.coll(cx, CollType::AllGather, buckets_[i].group, buckets_[i].params * cx.f().weight_bytes,
                          "dp_param_all_gather", Ref{});
  }
}

Ref GradSync::reduce_bucket(Emitter& em, const Context& cx, const Bucket& b) const {
  const auto& tr = cx.job().training;
  const bool scatter = tr.distributed_optimizer && !tr.zero1_grad_all_reduce;
  return em.coll(cx, scatter ? CollType::ReduceScatter : CollType::AllReduce, b.group, b.params * cx.f().grad_bytes,
                 scatter ? "dp_grad_reduce_scatter" : "dp_grad_all_reduce", em.last(Stream::Compute));
}

void GradSync::params_ready(Emitter& em, const Context& cx, const std::vector<int>& units, size_t i) {
  const int unit = units[i];
  if (!cx.f().zero3) {
    // Before a unit's first forward (first micro-batch of its chunk): wait for its parameters' all-gather.
    if (cx.at.phase != Phase::Forward || chunk_started_[static_cast<size_t>(cx.at.chunk)]) return;
    for (size_t b = 0; b < buckets_.size(); ++b) {
      if (gathers_[b].count && buckets_[b].chunk == cx.at.chunk && buckets_[b].close_unit == unit) {
        em.wait_at_next(gathers_[b]);
      }
    }
    return;
  }
  const Ref before = em.last(Stream::Compute);
  if (cx.f().zero3_blocking) {
    // The host waits for each tensor's gather before it computes (no prefetch); full recompute's forward inside the
    // backward re-gathers the parameters it released after the first forward.
    const bool layer = unit != kEmbeddingUnit && unit != kHeadUnit;
    const bool regather = layer && cx.at.phase == Phase::Backward && recomputed(cx, unit);
    Ref last = zero3_blocking_gather(em, cx, unit, before);
    if (regather) last = zero3_blocking_gather(em, cx, unit, last);
    em.wait_at_next(last);
    return;
  }
  zero3_gather(em, cx, unit, before);
  if (i + 1 < units.size()) zero3_gather(em, cx, units[i + 1], before);
  if (cx.f().profile.zero3_module_hook_us > 0) {
    deepspeed_module_hooks(em, cx, unit, z3_gathers_[unit]);
    return;
  }
  if (!cx.f().fsdp2_copy_out) {
    em.wait_at_next(z3_gathers_[unit]);
    return;
  }
  // FSDP2 copies the gathered flat buffer out into the unit's parameters on the compute stream before it runs.
  const int64_t bytes = 2 * cx.f().weight_bytes * (unit_params(cx, unit, false) + unit_params(cx, unit, true));
  em.compute(cx, memop(ComputeCategory::Elementwise, bytes), "fsdp2_all_gather_copy_out", {z3_gathers_[unit]});
}

void GradSync::zero3_gather(Emitter& em, const Context& cx, int unit, Ref dep) {
  if (z3_gathers_.count(unit)) return;
  const int64_t wb = cx.f().weight_bytes;
  Ref last = em.coll(cx, CollType::AllGather, GroupKind::Dp, unit_params(cx, unit, false) * wb, "zero3_param_all_gather",
                     dep);
  if (unit_params(cx, unit, true) > 0) {
    last = em.coll(cx, CollType::AllGather, GroupKind::Edp, unit_params(cx, unit, true) * wb,
                   "zero3_expert_param_all_gather", dep);
  }
  z3_gathers_[unit] = last;
}

// ZeRO-3 blocking fetch: one all-gather per parameter tensor, each issued after the previous completed. DeepSpeed then
// gathered into a list of per-rank views (torch.distributed.all_gather before PyTorch's _all_gather_base), which
// ProcessGroupNCCL fills from a flat buffer with one host-launched copy_ per rank: dp launches per tensor, the host
// waiting before the next gather. The copy's host time is the median of aten::copy_ (dispatch + launch) in the real
// Kineto trace shared/data/real/hta/ns_resolution_trace (1,600 calls, V100, PyTorch 1.x); docs/MODEL.md.
Ref GradSync::zero3_blocking_gather(Emitter& em, const Context& cx, int unit, Ref dep) const {
  const int64_t dp = cx.layout().group_size(GroupKind::Dp);
  const int64_t wb = cx.f().weight_bytes;
  Ref last = dep;
  if (dp > 1) {
    Op copies;
    copies.category = ComputeCategory::Host;
    copies.duration_ns = std::llround(static_cast<double>(dp) * cx.f().profile.zero3_host_copy_us * 1e3);
    for (int64_t n : unit_tensors(cx, unit)) {
      if (n <= 0) continue;
      last = em.coll(cx, CollType::AllGather, GroupKind::Dp, n * wb, "zero3_param_all_gather", last);
      last = em.compute(cx, copies, "zero3_gather_copy_back", {last});
    }
  }
  const int64_t experts = unit_params(cx, unit, true);
  if (experts > 0) {
    last = em.coll(cx, CollType::AllGather, GroupKind::Edp, experts * wb, "zero3_expert_param_all_gather", last);
  }
  return last;
}

namespace {

// A unit's parameter tensors as Hugging Face's Llama holds them, in the order backward completes their gradients:
// the fused tensors of unit_tensors split into q/k/v_proj and gate/up_proj, the last module's first.
std::vector<int64_t> hf_llama_tensors(const Context& cx, int unit) {
  const std::vector<int64_t> fused = unit_tensors(cx, unit);
  std::vector<int64_t> out;
  const ModelDims& d = cx.d();
  const bool layer = unit != kEmbeddingUnit && unit != kHeadUnit && fused.size() >= 4;
  for (size_t i = 0; i < fused.size(); ++i) {
    if (layer && i == 0) {  // linear_qkv -> q_proj, k_proj, v_proj
      const int64_t k = d.h * k_width(d);
      out.insert(out.end(), {d.h * d.q_width, k, fused[0] - d.h * d.q_width - k});
    } else if (layer && i == 2 && d.ffn_in != d.ffn / d.t) {  // linear_fc1 of a gated MLP -> gate_proj, up_proj
      out.insert(out.end(), {fused[2] / 2, fused[2] - fused[2] / 2});
    } else if (fused[i] > 0) {
      out.push_back(fused[i]);
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

// DeepSpeed ZeRO-3's hooks around each module of the unit (fetch and prefetch before it, release after it; in backward
// each parameter's gradient hook too): Python on the host that waits for the gathers it fetched (at most two fetch
// events outstanding, PartitionedParameterCoordinator.fetch_sub_module) and for the reductions it issued (likewise,
// __reduce_and_partition_ipg_grads), so the GPU runs no kernel of the module meanwhile: one op on the compute stream,
// after the unit's gather.
void GradSync::deepspeed_module_hooks(Emitter& em, const Context& cx, int unit, Ref gathered) const {
  const FrameworkProfile& p = cx.f().profile;
  const int modules = unit == kEmbeddingUnit ? p.embedding_modules : unit == kHeadUnit ? p.head_modules : p.layer_modules;
  Op hooks;
  hooks.category = ComputeCategory::Host;
  hooks.duration_ns = std::llround(modules * p.zero3_module_hook_us * 1e3);
  em.compute(cx, hooks, "zero3_module_hooks", {gathered});
}

// DeepSpeed ZeRO-3's gradient buckets (stage3.py reduce_independent_p_g_buckets_and_remove_grads): each parameter's
// gradient joins the bucket in backward order; a parameter that would overflow reduce_bucket_size elements first
// reduce-scatters what the bucket holds, and one larger than the bucket goes alone; the backward's end flushes the
// rest (independent_gradient_partition_epilogue). Every micro-batch, in the communication dtype.
void GradSync::deepspeed_bucket_grads(Emitter& em, const Context& cx, int unit) {
  const Features& f = cx.f();
  const Ref dep = em.last(Stream::Compute);
  auto flush = [&] {
    if (ipg_elements_ == 0) return;
    em.coll(cx, CollType::ReduceScatter, GroupKind::Dp, ipg_elements_ * f.grad_bytes, "sharded_grad_reduce_scatter",
            dep);
    ipg_elements_ = 0;
  };
  for (const int64_t n : hf_llama_tensors(cx, unit)) {
    if (ipg_elements_ + n > f.reduce_bucket) flush();
    ipg_elements_ += n;
  }
  if (unit == kEmbeddingUnit) flush();
}

void GradSync::unit_backward_done(Emitter& em, const Context& cx, int unit) {
  const Features& f = cx.f();
  if (f.shard_grads && f.reduce_bucket > 0) {
    deepspeed_bucket_grads(em, cx, unit);
  } else if (f.shard_grads) {
    const Ref dep = em.last(Stream::Compute);
    em.coll(cx, CollType::ReduceScatter, GroupKind::Dp, unit_params(cx, unit, false) * f.grad_bytes,
            "sharded_grad_reduce_scatter", dep);
    if (unit_params(cx, unit, true) > 0) {
      em.coll(cx, CollType::ReduceScatter, GroupKind::Edp, unit_params(cx, unit, true) * f.grad_bytes,
              "sharded_expert_grad_reduce_scatter", dep);
    }
  }
  if (cx.at.microbatch != cx.shape().microbatches - 1) return;
  if (unit == kHeadUnit) sp_params_ += cx.d().params_final_norm;
  else if (unit != kEmbeddingUnit) sp_params_ += sequence_parallel_params(cx, unit);
  if (f.shard_grads || !cx.job().training.overlap_grad_reduce) return;
  for (const Bucket& b : buckets_) {
    if (b.chunk == cx.at.chunk && b.close_unit == unit) reduce_bucket(em, cx, b);
  }
}

void GradSync::finish_grad_reduction(Emitter& em, const Context& cx) {
  if (!cx.job().training.overlap_grad_reduce && !cx.f().shard_grads) {
    for (const Bucket& b : buckets_) reduce_bucket(em, cx, b);
  }
  if (cx.d().sp && sp_params_ > 0) {
    // After the DP gradient sync, as Megatron's finalize_model_grads orders it.
    em.coll(cx, CollType::AllReduce, GroupKind::Tp, sp_params_ * cx.f().grad_bytes, "sequence_parallel_grad_all_reduce",
            em.last(Stream::Compute), em.last(Stream::Dp));
  }
}

void GradSync::gather_params_after_step(Emitter& em, const Context& cx, Ref optimizer) {
  const Features& f = cx.f();
  if (!f.distributed_optimizer || cx.job().training.overlap_param_gather || f.zero3) return;
  for (size_t i = buckets_.size(); i-- > 0;) {
    em.coll(cx, CollType::AllGather, buckets_[i].group, buckets_[i].params * f.weight_bytes, "dp_param_all_gather",
            optimizer);
  }
}

int64_t GradSync::dense_params() const {
  int64_t n = 0;
  for (const Bucket& b : buckets_) n += b.group == GroupKind::Edp ? 0 : b.params;
  return n;
}

int64_t GradSync::expert_params() const {
  int64_t n = 0;
  for (const Bucket& b : buckets_) n += b.group == GroupKind::Edp ? b.params : 0;
  return n;
}

}  // namespace stepsim::workload::megatron
