// Representative compute kernels of a transformer training step, each with the stepsim compute category it
// stands for (workload::ComputeCategory names): a GEMM (cuBLAS bf16 when built with it, else a tiled fp32 kernel),
// a layernorm, an elementwise GeLU. Sizes are chosen so that each runs long enough (~0.1-2 ms on a data-center GPU)
// for cudaEvent timing to be accurate.
#pragma once
#include <cuda_runtime.h>
#ifdef HAVE_CUBLAS
#include <cublas_v2.h>
#endif
#include <cuda_bf16.h>

#include <functional>
#include <string>
#include <vector>

#include "cuda_check.cuh"

namespace overlap_bench {

struct ComputeCase {
  std::string name;         // written to the dataset's `kernel` column; also the NVTX range name under ncu
  std::string kernel_type;  // stepsim compute category
  std::function<void(cudaStream_t)> launch;
};

// Fallback GEMM: C = A * B, fp32, 32x32 tiles in shared memory (n divisible by 32).
__global__ void tiled_sgemm(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[32][33], tb[32][33];
  const int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; t += 32) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < 32; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}

// Layernorm over rows of `hidden` floats, one block per row (memory-bound, like Megatron's fused layernorm).
__global__ void layernorm(const float* x, float* y, int hidden) {
  __shared__ float red[2][32];
  const float* in = x + static_cast<size_t>(blockIdx.x) * hidden;
  float* out = y + static_cast<size_t>(blockIdx.x) * hidden;
  float s = 0, sq = 0;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    s += in[i];
    sq += in[i] * in[i];
  }
  for (int o = 16; o > 0; o /= 2) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    sq += __shfl_xor_sync(0xffffffffu, sq, o);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  if (lane == 0) red[0][warp] = s, red[1][warp] = sq;
  __syncthreads();
  s = lane < warps ? red[0][lane] : 0;
  sq = lane < warps ? red[1][lane] : 0;
  for (int o = 16; o > 0; o /= 2) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    sq += __shfl_xor_sync(0xffffffffu, sq, o);
  }
  const float mean = s / hidden, inv = rsqrtf(fmaxf(sq / hidden - mean * mean, 0.f) + 1e-5f);
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) out[i] = (in[i] - mean) * inv;
}

// GeLU (tanh-free sigmoid form) over n floats, grid-stride.
__global__ void gelu(const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    y[i] = v / (1.f + __expf(-1.702f * v));
  }
}

// Owns the buffers the cases use (allocated once, sized for the biggest case).
class ComputeCases {
 public:
  explicit ComputeCases(int sm_count) {
    const size_t floats = size_t{64} << 20;  // 256 MiB each
    CUDA_CHECK(cudaMalloc(&x_, floats * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&y_, floats * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&z_, floats * sizeof(float)));
    CUDA_CHECK(cudaMemset(x_, 0, floats * sizeof(float)));
    CUDA_CHECK(cudaMemset(y_, 0, floats * sizeof(float)));
#ifdef HAVE_CUBLAS
    if (cublasCreate(&blas_) != CUBLAS_STATUS_SUCCESS) fail("cublasCreate failed");
    for (int n : {2048, 4096, 8192}) {
      cases_.push_back({"gemm_bf16_" + std::to_string(n), "gemm", [this, n](cudaStream_t s) { bf16_gemm(s, n); }});
    }
#else
    for (int n : {1024, 2048}) {
      cases_.push_back({"gemm_fp32_tiled_" + std::to_string(n), "gemm", [this, n](cudaStream_t s) {
                          tiled_sgemm<<<dim3(n / 32, n / 32), dim3(32, 32), 0, s>>>(x_, y_, z_, n);
                        }});
    }
#endif
    for (int hidden : {4096, 8192}) {
      const int rows = static_cast<int>((size_t{32} << 20) / hidden);
      cases_.push_back({"layernorm_" + std::to_string(rows) + "x" + std::to_string(hidden), "norm",
                        [this, rows, hidden](cudaStream_t s) { layernorm<<<rows, 256, 0, s>>>(x_, z_, hidden); }});
    }
    for (size_t n : {size_t{16} << 20, size_t{64} << 20}) {
      cases_.push_back({"gelu_" + std::to_string(n >> 20) + "M", "elementwise", [this, n, sm_count](cudaStream_t s) {
                          gelu<<<sm_count * 8, 256, 0, s>>>(x_, z_, n);
                        }});
    }
  }
  ~ComputeCases() {
#ifdef HAVE_CUBLAS
    cublasDestroy(blas_);
#endif
    cudaFree(x_);
    cudaFree(y_);
    cudaFree(z_);
  }
  const std::vector<ComputeCase>& cases() const { return cases_; }

 private:
#ifdef HAVE_CUBLAS
  // bf16 inputs, fp32 accumulation: what Megatron's linear layers run.
  void bf16_gemm(cudaStream_t s, int n) {
    const float one = 1, zero = 0;
    cublasSetStream(blas_, s);
    const auto* a = reinterpret_cast<const __nv_bfloat16*>(x_);
    const auto* b = reinterpret_cast<const __nv_bfloat16*>(y_);
    if (cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n, &zero,
                     reinterpret_cast<__nv_bfloat16*>(z_), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
      fail("cublasGemmEx failed");
    }
  }
  cublasHandle_t blas_ = nullptr;
#endif
  float *x_ = nullptr, *y_ = nullptr, *z_ = nullptr;
  std::vector<ComputeCase> cases_;
};

}  // namespace overlap_bench
