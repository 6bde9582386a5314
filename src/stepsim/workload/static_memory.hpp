#pragma once
// Static memory of a rank: weights, gradients and optimizer states (Megatron-LM's distributed-optimizer
// table; MoFa eq. 4 and 25), plus framework overheads as documented constants.
#include <cstdint>

#include "stepsim/job/job_spec.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::workload {

// Framework overheads (docs/MODEL.md): the CUDA context and cuBLAS/cuDNN workspaces, and NCCL's buffers
// for each communicator kind a rank uses.
constexpr int64_t kCudaContextBytes = int64_t{768} << 20;
constexpr int64_t kNcclBytesPerCommunicator = int64_t{192} << 20;
// DeepSpeed ZeRO-3's stage3_max_live_parameters default: gathered parameters beyond it are released.
constexpr int64_t kDeepSpeedMaxLiveParams = 1'000'000'000;

struct BytesPerParam {
  int weight = 2;          // low-precision model weights
  int gradient = 4;        // main gradients (fp32 when Megatron accumulates/reduces in fp32)
  int optimizer = 12;      // master weights + Adam m and v (fp32 each unless the precision-aware optimizer says)
  int step_grad_copy = 0;  // fp32 copy of 16-bit gradients that exists only while the optimizer step runs
  int step_traffic = 30;   // HBM bytes the GPU's Adam step moves per parameter
};
BytesPerParam bytes_per_param(const spec::TrainingSpec& t);

// Bytes per parameter of Transformer Engine's fp8 copies of a linear layer's weight, kept for the whole step (Megatron
// passes is_first_microbatch, so TE quantizes once per step and caches): the rowwise fp8 weight for forward and the
// transposed / columnwise one for the input-gradient GEMM, 1 byte each (mxfp8: + one e8m0 scale per 32 values each).
// With fp8_param_gather the parameter itself is the fp8 rowwise copy (counted in the weights): only the transpose.
// 0 for a job that does not train in fp8.
double fp8_cache_bytes_per_param(const spec::TrainingSpec& t);

// The parameters one rank holds, as the frameworks' sharding sees them.
struct RankParams {
  int64_t dense = 0;
  int64_t expert = 0;
  int64_t bf16 = 0;           // kept in bf16 under fp8 (word embeddings, output layer, bf16 layers): no fp8 copies
  int64_t root = 0;           // outside the transformer layers: embedding, final norm, output layer
  int64_t largest_layer = 0;  // the largest transformer layer's: what ZeRO-3 gathers at once
  int64_t head = 0;           // of root: the final norm and output layer
};

// Static memory of a rank for its framework (docs/MODEL.md §8): Megatron-Core's buffers and distributed optimizer,
// DeepSpeed's and Megatron-FSDP's ZeRO stages, or torchtitan's FSDP2. dp_shards and edp_shards: the DP(-with-CP) and
// expert-DP group sizes.
StaticMemory static_memory(const spec::JobSpec& job, const RankParams& params, int64_t dp_shards, int64_t edp_shards,
                           int communicators);

}  // namespace stepsim::workload
