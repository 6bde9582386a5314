#pragma once
// Whether a stage's peak fits its GPU as PyTorch would find it. The caching allocator's reserve beyond what is
// allocated (blocks freed but cached, other streams' pools) is not lost: when cudaMalloc fails, PyTorch frees every
// cached block that no live tensor shares a segment with and retries before it raises an out-of-memory error
// (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc: release_available_cached_blocks, then
// release_cached_blocks). So a step is out of memory when what is allocated, with the CUDA context and NCCL's buffers
// beside it, exceeds the GPU; one whose reserved peak alone exceeds it is tight: it can run, paying a cudaFree and a
// device synchronisation per retry (torch.cuda.memory_stats()["num_alloc_retries"]), unless a fragmented segment holds
// the space (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True keeps that reserve small).
#include <cstdint>

namespace stepsim::report {

enum class MemoryFit { Fits, Tight, Over };

// allocated: PyTorch's max_memory_allocated at the peak; overhead: the CUDA context and NCCL (outside the allocator);
// peak: reserved + overhead.
inline MemoryFit memory_fit(int64_t allocated, int64_t overhead, int64_t peak, int64_t capacity) {
  if (allocated + overhead > capacity) return MemoryFit::Over;
  return peak > capacity ? MemoryFit::Tight : MemoryFit::Fits;
}

// What a tight verdict means, said under the memory tables.
inline constexpr const char* tight_memory_note =
    "  (tight: what PyTorch allocates, with the CUDA context and NCCL beside it, fits the GPU but its reserved peak "
    "does not; the caching allocator frees cached blocks and retries when cudaMalloc fails, a device synchronisation "
    "each (num_alloc_retries), and PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True keeps the reserve small)";

// The mark a memory table puts after a stage's row.
inline const char* memory_fit_mark(MemoryFit f) {
  return f == MemoryFit::Over ? "  OOM" : f == MemoryFit::Tight ? "  tight" : "";
}

}  // namespace stepsim::report
