#include "stepsim/workload/static_memory.hpp"

#include <cmath>

namespace stepsim::workload {

BytesPerParam bytes_per_param(const spec::TrainingSpec& t) {
  BytesPerParam b;
  using spec::Precision;
  if (t.precision == Precision::Fp32) return BytesPerParam{4, 4, 8};  // weights, grads, Adam m and v
  b.weight = 2;  // fp16/bf16
  // fp8: Transformer Engine's fp8 weight and transpose caches are not counted yet (issue 13 item 5, transient
  // buffers); with fp8_param_gather the parameters are fp8 (1 byte) and all-gathered in fp8.
  if (t.precision == Precision::Fp8 && t.fp8_param_gather) b.weight = 1;
  const bool fp32_grads = t.grad_reduce_in_fp32.value_or(t.precision != Precision::Fp16);
  b.gradient = fp32_grads ? 4 : 2;
  b.optimizer = fp32_grads ? 12 : 16;  // master + m + v (+ an fp32 copy of fp16 gradients)
  return b;
}

StaticMemory static_memory(const spec::JobSpec& job, int64_t dense_params, int64_t expert_params,
                           int64_t dp_shards, int64_t edp_shards, int communicators) {
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
  return m;
}

}  // namespace stepsim::workload
