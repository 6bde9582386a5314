#pragma once
// Builds the per-rank programs of one training step as Megatron-LM (Megatron-Core) issues them.
#include "stepsim/workload/program.hpp"

namespace stepsim::workload {

// Refuses (InputError) jobs whose program would exceed this many ops per rank (~1 GB of ops).
constexpr size_t kMaxOpsPerProgram = 8'000'000;

// Ops one rank issues in a step, before building: about 40 per layer and micro-batch (60 for MoE) over the stage's
// layers plus embedding and head.
inline double estimated_ops_per_rank(const spec::JobSpec& job) {
  const double layers_per_stage = static_cast<double>(job.model.num_layers) / job.parallelism.pipeline + 2.0;
  return static_cast<double>(job.num_microbatches()) * layers_per_stage * (job.model.moe ? 60.0 : 40.0);
}

// One Program per pipeline stage. Compute durations are left 0 (the engine's compute model fills them).
Workload build_megatron_workload(const spec::JobSpec& job);

}  // namespace stepsim::workload
