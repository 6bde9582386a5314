#pragma once
// The value every module function receives beside the emitter: what the stage is built from (immutable) and where in
// the step the ops being built belong (phase, layer, micro-batch, chunk) and how they are emitted (stored for
// backward or not, kept in bf16, a weight gradient). A module that changes any of these passes a modified copy down;
// nothing is toggled and restored.
#include <cstdint>

#include "stepsim/job/job_spec.hpp"
#include "stepsim/workload/megatron/features.hpp"
#include "stepsim/workload/megatron/stage_shape.hpp"
#include "stepsim/workload/model_dims.hpp"
#include "stepsim/workload/op.hpp"
#include "stepsim/workload/rank_layout.hpp"

namespace stepsim::workload::megatron {

// Where in the step an op belongs, as the trace and the breakdown show it.
struct Position {
  Phase phase = Phase::Forward;
  int layer = -1;  // global transformer layer (MTP depth: num_layers + k), -1 = none (embedding, head, optimizer)
  int microbatch = -1;
  int chunk = 0;
  UnitKind unit = UnitKind::None;  // set for the ops of a unit's pass only
};

// What one stage is built from.
struct StageFacts {
  const spec::JobSpec& job;
  const ModelDims& d;
  const RankLayout& layout;
  const Features& f;
  const StageShape& shape;
};

struct Context {
  const StageFacts* facts = nullptr;
  Position at;
  bool storing = true;         // false inside the forward of a fully recomputed layer: nothing is stored
  bool bf16 = false;           // GEMMs Transformer Engine keeps in bf16 under fp8 (the output layer, the router)
  bool wgrad = false;          // a weight-gradient GEMM: its fp8 operands are the transposed copies the forward cast
  bool saving_outputs = false;  // a GEMM's saved bytes are its bf16 output, not its input (MLA up-projections)

  const spec::JobSpec& job() const { return facts->job; }
  const ModelDims& d() const { return facts->d; }
  const Features& f() const { return facts->f; }
  const RankLayout& layout() const { return facts->layout; }
  const StageShape& shape() const { return facts->shape; }
  int64_t beta() const { return facts->f.act_bytes; }

  // Copies with one thing changed, for the modules below.
  template <class Change>
  Context with(Change&& change) const {
    Context c = *this;
    change(c);
    return c;
  }
  Context in(Phase p) const { return with([p](Context& c) { c.at.phase = p; }); }
  Context on_layer(int layer) const { return with([layer](Context& c) { c.at.layer = layer; }); }
  Context keeping_bf16() const { return with([](Context& c) { c.bf16 = true; }); }
  Context as_wgrad() const { return with([](Context& c) { c.wgrad = true; }); }
  Context storing_outputs() const { return with([](Context& c) { c.saving_outputs = true; }); }
  Context not_storing() const { return with([](Context& c) { c.storing = false; }); }

  // Selective recompute of a Megatron-Core module (training.recompute_modules).
  bool recomputes(spec::RecomputeModule m) const { return job().training.recomputes(m); }
  // Inside the forward pass of a checkpointed module: nothing it computes is stored.
  bool discarding(spec::RecomputeModule m) const { return recomputes(m) && at.phase == Phase::Forward; }
};

}  // namespace stepsim::workload::megatron
