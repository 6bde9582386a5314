// The communication proxy: a stand-in for an NCCL collective on a single GPU. NCCL runs one thread block per
// channel, and each block streams the message through HBM in chunks: it reads what it sends from the user buffer
// and its peers write what it receives into this GPU's memory over NVLink (plus, for reductions, one more read of
// the local operand). The proxy reproduces that footprint on this GPU: `channels` blocks of 512 threads (NCCL's
// thread count), each copying (or, for reduce-type collectives, adding) its share of the ring traffic in 512 KiB
// chunks through global memory, and holding its pace to link_GBps / channels by spinning on the global timer after
// each chunk. What it cannot reproduce: NVLink/PCIe traffic itself, the LL/LL128 protocols' flag words, peer
// synchronisation stalls, and SM placement (the hardware places the blocks; on an idle GPU, one per SM).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace overlap_bench {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Moves `bytes` (per repetition, split evenly over the blocks) `repeat` times. reduce: dst += src (two reads, one
// write per element, as a reduce step); else dst = src. *started is set when the first block begins.
__global__ void __launch_bounds__(512) comm_proxy(const float4* src, float4* dst, size_t bytes, int repeat,
                                                  bool reduce, double bytes_per_ns_per_block, int* started) {
  constexpr size_t kChunk = 512 << 10;  // bytes per paced chunk
  if (blockIdx.x == 0 && threadIdx.x == 0) atomicExch(started, 1);
  const size_t per_block = (bytes / gridDim.x) & ~size_t{15};
  const size_t first = per_block * blockIdx.x / sizeof(float4);
  __shared__ uint64_t t0;
  if (threadIdx.x == 0) t0 = global_ns();
  __syncthreads();
  size_t moved = 0;
  for (int r = 0; r < repeat; ++r) {
    for (size_t off = 0; off < per_block; off += kChunk) {
      const size_t n = (per_block - off < kChunk ? per_block - off : kChunk) / sizeof(float4);
      const size_t base = first + off / sizeof(float4);
      for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        float4 v = src[base + i];
        if (reduce) {
          const float4 d = dst[base + i];
          v.x += d.x, v.y += d.y, v.z += d.z, v.w += d.w;
        }
        dst[base + i] = v;
      }
      moved += n * sizeof(float4);
      if (threadIdx.x == 0) {  // pace: no faster than the link would deliver
        const uint64_t due = t0 + static_cast<uint64_t>(static_cast<double>(moved) / bytes_per_ns_per_block);
        while (global_ns() < due) {
        }
      }
      __syncthreads();
    }
  }
}

// Holds the compute stream until the proxy runs, so that the timed compute kernel overlaps it from its start.
// Gives up after 1 s (a GPU that cannot run both kernels at once) and records that in *timed_out.
__global__ void wait_started(const int* started, int* timed_out) {
  const uint64_t t0 = global_ns();
  while (atomicAdd(const_cast<int*>(started), 0) == 0) {
    if (global_ns() - t0 > 1000000000ull) {
      atomicExch(timed_out, 1);
      return;
    }
  }
}

}  // namespace overlap_bench
