#pragma once
// Builds the per-rank programs of one training step as Megatron-LM (Megatron-Core) issues them.
#include "stepsim/workload/program.hpp"

namespace stepsim::workload {

// Refuses (InputError) jobs whose program would exceed this many ops per rank (~1 GB of ops).
constexpr size_t kMaxOpsPerProgram = 8'000'000;

// One Program per pipeline stage. Compute durations are left 0 (the engine's compute model fills them).
Workload build_megatron_workload(const spec::JobSpec& job);

}  // namespace stepsim::workload
