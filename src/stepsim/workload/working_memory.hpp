#pragma once
// Memory PyTorch reports above the activations a rank stores for backward: the working buffers of the kernel being
// run (a layer's full-width inputs and outputs, the logits beside their fp32 copy) and what the caching allocator
// reserves beyond what it hands out. Measured with Megatron-Core's own layers on one H100 (bench/gpu/measure_memory.py,
// data/measurements/h100-sxm/memory*.csv; docs/MODEL.md §9, "Working buffers").
#include <cmath>
#include <cstdint>
#include <optional>

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
// allocator): 0.039 for dense layers (fixed shapes), 0.056 for MoE layers whose experts' row counts change every
// micro-batch (dropless routing). With expandable segments the same dense loop reserved 202,499,584 B beyond its
// peak where the default allocator reserved 699,525,120 B over the same activations: 0.039 x 0.2895 = 0.0113.
constexpr double kAllocatorReserveFixedShapes = 0.039;
constexpr double kAllocatorReserveDropless = 0.056;
constexpr double kAllocatorReserveExpandable = 0.0113;

inline double allocator_reserve_fraction(const spec::JobSpec& job) {
  if (job.training.expandable_segments) return kAllocatorReserveExpandable;
  const bool varying = job.model.moe && !(job.model.moe->capacity_factor && job.model.moe->pad_to_capacity);
  return varying ? kAllocatorReserveDropless : kAllocatorReserveFixedShapes;
}
// How far measured peaks (PyTorch's max_memory_reserved as the framework logs it) have been from the predicted reserved
// peak: the 10th and 90th percentile of (predicted - measured) / measured over the development runs that report one
// (`stepsim validate` prints each; tests/test_memory_validation.cpp recomputes the band from them). None for a
// framework no run reports a peak for.
struct MemoryBand {
  double low = 0, high = 0;
  int runs = 0;
};
std::optional<MemoryBand> memory_band(spec::Framework framework);

inline int64_t allocator_reserve_bytes(const spec::JobSpec& job, double activation_peak_bytes) {
  return std::llround(allocator_reserve_fraction(job) * activation_peak_bytes);
}

}  // namespace stepsim::workload
