#pragma once
// Memory PyTorch reports above the activations a rank stores for backward: the working buffers of the kernel being
// run (a layer's full-width inputs and outputs, the logits beside their fp32 copy) and what the caching allocator
// reserves beyond what it hands out. Measured with Megatron-Core's own layers on one H100 (bench/gpu/measure_memory.py,
// data/measurements/h100-sxm/memory*.csv; docs/MODEL.md §9, "Working buffers").
#include <cmath>
#include <cstdint>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::workload {

// Peak above the stored activations while a transformer layer runs, in units of β T h (T the micro-batch's tokens on
// the rank, h the hidden size): forward 3, backward 6 plus a fixed 128 MiB. The same at TP shards 1, 2, 4 and 8 and for
// dense and MoE layers: the buffers are the full-width tensors (the layer's input and output, the row-parallel GEMMs'
// outputs before their reduction, the gradients flowing between the blocks), which tensor parallelism does not split.
constexpr int64_t kLayerForwardWorkingBTH = 3;
constexpr int64_t kLayerBackwardWorkingBTH = 6;
constexpr int64_t kLayerBackwardWorkspaceBytes = int64_t{128} << 20;

// Reserved minus allocated at the peak of a 1F1B-like loop, over the activation part of the peak (PyTorch's default
// allocator, expandable segments off): 0.039 for dense layers (fixed shapes), 0.056 for MoE layers whose experts'
// row counts change every micro-batch (dropless routing).
constexpr double kAllocatorReserveFixedShapes = 0.039;
constexpr double kAllocatorReserveDropless = 0.056;

inline double allocator_reserve_fraction(const spec::JobSpec& job) {
  const bool varying = job.model.moe && !(job.model.moe->capacity_factor && job.model.moe->pad_to_capacity);
  return varying ? kAllocatorReserveDropless : kAllocatorReserveFixedShapes;
}
inline int64_t allocator_reserve_bytes(const spec::JobSpec& job, double activation_peak_bytes) {
  return std::llround(allocator_reserve_fraction(job) * activation_peak_bytes);
}

}  // namespace stepsim::workload
