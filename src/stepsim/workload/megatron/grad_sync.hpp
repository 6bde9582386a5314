#pragma once
// Data-parallel gradient synchronisation and parameter sharding of one stage, as Megatron-Core's DDP and distributed
// optimizer (ZeRO-1) and ZeRO-2/3 / FSDP run it: the gradient buckets and their reductions (overlapped with the
// backward or after it), the distributed optimizer's parameter all-gathers, ZeRO-2/3's per-unit reduce-scatters and
// ZeRO-3's per-unit parameter gathers with prefetch, and the TP all-reduce of sequence-parallel parameters' gradients.
#include <unordered_map>
#include <vector>

#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

class GradSync {
 public:
  // Plans the stage's buckets (Megatron-Core's DDP: per model chunk, dense and expert parameters apart).
  explicit GradSync(const Context& cx);

  // The distributed optimizer's parameter all-gather of the previous step, overlapped with this step's forward: issued
  // first (forward order); each unit's first forward waits for its bucket.
  void issue_overlapped_param_gathers(Emitter& em, const Context& cx);
  // A pass over a model chunk starts / has ended (ZeRO-3 gathers are per pass; the overlapped gathers are waited for
  // by the chunk's first forward only).
  void start_pass() { z3_gathers_.clear(); }
  void end_forward(int chunk) { chunk_started_[static_cast<size_t>(chunk)] = true; }
  // Before the i-th unit of a pass computes: its parameters (ZeRO-3: all-gathered, the next unit's gather issued now so
  // that it runs while this unit computes, as DeepSpeed's and FSDP's prefetch do; else the distributed optimizer's
  // overlapped all-gather of the previous step).
  void params_ready(Emitter& em, const Context& cx, const std::vector<int>& units, size_t i);
  // After a unit's backward: ZeRO-2/3 reduce-scatter its gradients; in the last micro-batch, the buckets it completes
  // are reduced (overlapped reduction).
  void unit_backward_done(Emitter& em, const Context& cx, int unit);
  // The step's end, before the optimizer (Megatron's finalize_model_grads): the reductions not overlapped, then the
  // sequence-parallel parameters' gradients over TP.
  void finish_grad_reduction(Emitter& em, const Context& cx);
  // After the optimizer step: the distributed optimizer's parameter all-gather, unless it overlaps the next forward.
  void gather_params_after_step(Emitter& em, const Context& cx, Ref optimizer);

  int64_t dense_params() const;
  int64_t expert_params() const;

 private:
  // A gradient bucket: parameters of consecutive units (backward order) reduced by one collective.
  struct Bucket {
    int64_t params = 0;
    GroupKind group = GroupKind::Dp;
    int chunk = 0;
    // The bucket is complete once this unit's backward is done; it is also the bucket's earliest unit in forward order
    // (unit ids fall along the backward order), whose forward waits for the bucket's parameter all-gather.
    int close_unit = 0;
  };
  void plan_buckets(const Context& cx);
  Ref reduce_bucket(Emitter& em, const Context& cx, const Bucket& b) const;
  void zero3_gather(Emitter& em, const Context& cx, int unit, Ref dep);
  Ref zero3_blocking_gather(Emitter& em, const Context& cx, int unit, Ref dep) const;
  void deepspeed_module_hooks(Emitter& em, const Context& cx, int unit, Ref gathered) const;
  void deepspeed_bucket_grads(Emitter& em, const Context& cx, int unit);

  std::vector<Bucket> buckets_;     // reduction order
  std::vector<Ref> gathers_;        // the overlapped parameter all-gather of each bucket
  std::vector<bool> chunk_started_;
  std::unordered_map<int, Ref> z3_gathers_;  // unit -> its all-gather in the current pass
  int64_t sp_params_ = 0;  // parameters replicated over TP under SP, whose gradients Megatron all-reduces over TP
  int64_t ipg_elements_ = 0;  // DeepSpeed ZeRO-3: gradient elements in the bucket not yet reduce-scattered
};

}  // namespace stepsim::workload::megatron
