#include "stepsim/workload/static_memory.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::workload {

BytesPerParam bytes_per_param(const spec::TrainingSpec& t) {
  BytesPerParam b;
  using spec::Precision;
  // fp32: the weights are the master copy; Adam reads the gradient, reads and writes weight, m and v.
  if (t.precision == Precision::Fp32) return BytesPerParam{4, 4, 8, 0, 28};
  b.weight = 2;  // fp16/bf16
  // fp8: Transformer Engine's fp8 weight and transpose copies are StaticMemory::fp8_weight_cache; with
  // fp8_param_gather the parameters are fp8 (1 byte) and all-gathered in fp8.
  if (t.precision == Precision::Fp8 && t.fp8_param_gather) b.weight = 1;
  const bool fp32_grads = t.grad_reduce_in_fp32.value_or(t.precision != Precision::Fp16);
  b.gradient = fp32_grads ? 4 : 2;
  b.optimizer = t.main_params_bytes + t.exp_avg_bytes + t.exp_avg_sq_bytes;  // master weights + Adam m and v
  // Megatron's (distributed) optimizer copies 16-bit main gradients to fp32 for the step (shard_main_param.grad =
  // model_grad.float()) and drops the copy at the next zero_grad (set_to_none): memory only while the step runs.
  // The precision-aware optimizer (TE FusedAdam) reads them as they are.
  b.step_grad_copy = fp32_grads || t.precision_aware_optimizer ? 0 : 4;
  // Adam's HBM traffic: the gradient it reads, master weights, m and v read and written, the model weights written.
  b.step_traffic = (b.step_grad_copy > 0 ? 4 : b.gradient) + 2 * b.optimizer + b.weight;
  return b;
}

double fp8_cache_bytes_per_param(const spec::TrainingSpec& t) {
  // NVFP4: the weights' rowwise and columnwise e2m1 copies, each with an e4m3 scale per 16 x 16 block (2D scaling).
  if (t.precision == spec::Precision::Nvfp4) return 2 * (0.5 + 1.0 / 256);
  if (t.precision != spec::Precision::Fp8) return 0;
  const double copy = t.fp8_recipe == spec::Fp8Recipe::Mxfp8 ? 1.0 + 1.0 / 32 : 1.0;
  return t.fp8_param_gather ? copy : 2 * copy;
}

StaticMemory static_memory(const spec::JobSpec& job, int64_t dense_params, int64_t expert_params,
                           int64_t dp_shards, int64_t edp_shards, int communicators, int64_t bf16_params) {
  const BytesPerParam b = bytes_per_param(job.training);
  StaticMemory m;
  const int64_t params = dense_params + expert_params;
  // ZeRO-2 shards the gradients and ZeRO-3 the weights too, over the (expert-)data-parallel group.
  const int zero = job.training.zero_stage;
  auto shard = [&](int64_t bytes_per_param, bool sharded) {
    return sharded ? dense_params * bytes_per_param / dp_shards + expert_params * bytes_per_param / edp_shards
                   : params * bytes_per_param;
  };
  m.weights = shard(b.weight, zero >= 3);
  m.gradients = shard(b.gradient, zero >= 2);
  if (job.training.distributed_optimizer) {
    m.optimizer = dense_params * b.optimizer / dp_shards + expert_params * b.optimizer / edp_shards;
  } else {
    m.optimizer = params * b.optimizer;
  }
  // CPU optimizer offload (MoFa eq. 27): the offloaded share of the fp32 master weights and Adam moments lives in host
  // memory; the low-precision weights and the main gradients stay on the GPU.
  if (job.training.optimizer_offload) {
    m.optimizer = static_cast<int64_t>(std::llround(static_cast<double>(m.optimizer) *
                                                    (1.0 - job.training.optimizer_offload_fraction)));
  }
  m.overhead = kCudaContextBytes + int64_t{communicators} * kNcclBytesPerCommunicator;
  // ZeRO-3 gathers a layer's weights when it runs: its fp8 copies exist for the layers gathered at once, not the stage.
  const int64_t fp8_params = zero >= 3 ? 0 : std::max<int64_t>(0, params - bf16_params);
  m.fp8_weight_cache = static_cast<int64_t>(static_cast<double>(fp8_params) * fp8_cache_bytes_per_param(job.training));
  return m;
}

}  // namespace stepsim::workload
