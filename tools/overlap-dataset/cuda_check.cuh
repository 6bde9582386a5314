// Error checks for the collector: any CUDA/NCCL failure ends the run with the call and the reason.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace overlap_bench {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "overlap_bench: %s\n", what);
  std::exit(1);
}

#define CUDA_CHECK(call)                                                                                  \
  do {                                                                                                    \
    const cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                              \
      std::fprintf(stderr, "overlap_bench: %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                                       \
    }                                                                                                     \
  } while (0)

}  // namespace overlap_bench
