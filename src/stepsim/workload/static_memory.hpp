#pragma once
// Static memory of a rank: weights, gradients and optimizer states (Megatron-LM's distributed-optimizer
// table; MoFa eq. 4 and 25), plus framework overheads as documented constants.
#include <cstdint>

#include "stepsim/spec/job_spec.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::workload {

// Framework overheads (docs/MODEL.md): the CUDA context and cuBLAS/cuDNN workspaces, and NCCL's buffers
// for each communicator kind a rank uses.
constexpr int64_t kCudaContextBytes = int64_t{768} << 20;
constexpr int64_t kNcclBytesPerCommunicator = int64_t{192} << 20;

struct BytesPerParam {
  int weight = 2;     // low-precision model weights
  int gradient = 4;   // main gradients (fp32 when Megatron accumulates/reduces in fp32)
  int optimizer = 12; // fp32 master weights + Adam m and v (+ fp32 gradient copy when gradients are fp16)
};
BytesPerParam bytes_per_param(const spec::TrainingSpec& t);

// dense/expert params of one rank; shards = the DP(-with-CP) and expert-DP group sizes.
StaticMemory static_memory(const spec::JobSpec& job, int64_t dense_params, int64_t expert_params,
                           int64_t dp_shards, int64_t edp_shards, int communicators);

}  // namespace stepsim::workload
