#pragma once
// CPU optimizer offload's per-parameter costs (Megatron-LM's HybridDeviceOptimizer; MoFa eq. 28), shared by the
// workload builder that emits its ops and the planner's analytic estimate that times them without building.
#include <cstdint>

namespace stepsim::workload {

// Bytes over the host link per offloaded parameter, each way: fp32 gradients down, fp32 weights up (Megatron's
// non-blocking copy_ into pinned fp32 buffers and back; the casts run on the GPU).
constexpr int64_t kOffloadCopyBytesPerParam = 4;
// Host-DRAM bytes the CPU's Adam moves per parameter: fp32 weight, gradient, m and v read; weight, m and v written.
constexpr int64_t kCpuAdamBytesPerParam = 28;
// optimizer_offload_overlap: Megatron pipelines copy, update and copy back tensor by tensor; modelled as this many
// equal chunks.
constexpr int kOffloadChunks = 8;

}  // namespace stepsim::workload
