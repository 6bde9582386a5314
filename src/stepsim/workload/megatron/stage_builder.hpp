#pragma once
// One pipeline stage's program for one training step: the schedule's forward and backward steps over (micro-batch,
// model chunk), each a pass over the chunk's units with their parameter gathers, activation offload and gradient
// reductions; the pipeline exchanges between them; the combined 1F1B steps; and the step's end (finalize_model_grads,
// the optimizer).
#include "stepsim/workload/megatron/grad_sync.hpp"
#include "stepsim/workload/megatron/offload.hpp"
#include "stepsim/workload/schedule.hpp"

namespace stepsim::workload::megatron {

class StageBuilder {
 public:
  StageBuilder(const StageFacts& facts, Program& prog);
  void build();

 private:
  // The last exchange ops a compute step waits for, on each pipeline stream (prev stays empty unless exchanges are per
  // peer).
  struct PpRefs {
    Ref next, prev;
  };
  Context context(int layer) const;
  Ref unit_pass(const Context& cx, int unit, Ref x, bool forward);
  void pass(int mb, int chunk, Ref in, bool forward);
  void combined_step(const PipelineAction& a, PpRefs blocking, PpRefs fwd_async, PpRefs bwd_async);
  PpRefs exchange(const PipelineAction& a, uint64_t act);
  void finalize();
  void check_size() const;

  const StageFacts& facts_;
  Program& prog_;
  Emitter em_;
  GradSync grads_;
  ActivationOffload offload_;
  SavedActivations saved_;
  // The step being built (phase, micro-batch, chunk): its ops carry it, and so do the exchanges issued after it.
  Position step_at_;
  // The layer tag of the unit built last: a unit's parameter gathers are issued after it, beside its compute.
  int prev_layer_ = -1;
};

}  // namespace stepsim::workload::megatron
