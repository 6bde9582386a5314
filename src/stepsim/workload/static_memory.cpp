#include "stepsim/workload/static_memory.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/workload/working_memory.hpp"

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
  // FSDP2 (torchtitan, ZeRO-3): the sharded fp32 gradients its reduce-scatters leave, from the backward to the next
  // step's zero_grad (set_to_none); none exists yet at the activation peak (the loss).
  if (t.framework == spec::Framework::Torchtitan && t.zero_stage == 3) b.step_grad_copy = 4;
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

namespace {

// FSDP2 (torch.distributed.fsdp fully_shard) allocates each reduce-scatter's output, the sharded gradients in the
// reduction dtype, in its reduce-scatter stream, and each all-gather's input and output in its copy-in and all-gather
// streams (_fsdp_collectives.py; the reduce-scatter input moved to the default stream in PyTorch PR 129721, June
// 2024). The caching allocator keeps freed blocks in the pool of the stream that allocated them, so after zero_grad
// frees the gradients their blocks stay reserved for the reduce-scatter stream, as the all-gather streams keep their
// largest gather (output and the rank's input shard), while the default stream builds the next activation peak.
int64_t fsdp2_stream_pools(const spec::TrainingSpec& t, const RankParams& q, int64_t dp_shards,
                           int64_t sharded_grad_bytes, int weight_bytes) {
  const int64_t outside = t.fsdp_root_holds_head ? q.root : std::max(q.head, q.root - q.head);
  const int64_t largest_unit = std::max(outside, q.largest_layer) * weight_bytes;
  return sharded_grad_bytes + largest_unit + largest_unit / std::max<int64_t>(1, dp_shards);
}

// torchtitan's FSDP2 (MixedPrecisionPolicy bf16 parameters, fp32 reduction; torch.optim.AdamW): the sharded parameter
// is the fp32 master (no separate copy), Adam's m and v are fp32 beside it, and the bf16 parameters exist only as
// gathered. Without a pipeline the gathered ones are the unit kept from forward to backward (the root module's, for
// which FSDP2 turns reshard_after_forward off, or the final norm and output layer's) and the layers running and
// prefetched; under a pipeline FSDP2 reshards neither after forward nor after each micro-batch's
// backward (PipelineStage's no-sync), so the stage's parameters stay gathered and its gradients accumulate unsharded
// in the reduction dtype (fp32). DDP (zero_stage 0) keeps fp32 parameters, gradients and moments unsharded.
StaticMemory fsdp2_static_memory(const spec::JobSpec& job, const RankParams& q, int64_t dp_shards, int64_t edp_shards,
                                 const BytesPerParam& b) {
  StaticMemory m;
  const int64_t all = q.dense + q.expert;
  const int64_t gathered_bytes = b.weight;
  auto shard = [&](int64_t bytes) { return q.dense * bytes / dp_shards + q.expert * bytes / edp_shards; };
  if (job.training.zero_stage > 0) {
    m.stream_pools = fsdp2_stream_pools(job.training, q, dp_shards, shard(b.gradient), b.weight);
  }
  // Kept gathered between forward and backward without a pipeline: the root module's parameters, or the unit of the
  // final norm and output layer (the embedding reshards after forward).
  const int64_t kept = job.training.fsdp_root_holds_head ? q.root : q.head;
  switch (job.training.zero_stage) {
    case 0:
      m.weights = 4 * all;
      m.gradients = 4 * all;
      m.optimizer = 8 * all;
      break;
    case 3:
      m.weights = shard(4);
      m.optimizer = shard(8);
      m.gathered = 2 * kept + gathered_bytes * std::min(all - q.root, 2 * q.largest_layer);
      break;
    default:
      m.weights = shard(4);
      m.optimizer = shard(8);
      m.gathered = 2 * q.root + gathered_bytes * (all - q.root);
      m.gradients = 4 * all;
      break;
  }
  return m;
}

}  // namespace

StaticMemory static_memory(const spec::JobSpec& job, const RankParams& q, int64_t dp_shards, int64_t edp_shards,
                           int communicators) {
  const BytesPerParam b = bytes_per_param(job.training);
  const int zero = job.training.zero_stage;
  StaticMemory m;
  if (job.training.framework == spec::Framework::Torchtitan) {
    m = fsdp2_static_memory(job, q, dp_shards, edp_shards, b);
  } else {
    const int64_t params = q.dense + q.expert;
    // ZeRO-2 shards the gradients and ZeRO-3 the weights too, over the (expert-)data-parallel group.
    auto shard = [&](int64_t bytes_per_param, bool sharded) {
      return sharded ? q.dense * bytes_per_param / dp_shards + q.expert * bytes_per_param / edp_shards
                     : params * bytes_per_param;
    };
    m.weights = shard(b.weight, zero >= 3);
    m.gradients = shard(b.gradient, zero >= 2);
    m.optimizer = shard(b.optimizer, job.training.distributed_optimizer);
    // ZeRO-3 holds the unit it runs and the one it prefetches gathered. DeepSpeed (also its 2021 blocking fetch)
    // gathers per submodule and releases what exceeds stage3_max_live_parameters (default 1e9 parameters);
    // Megatron-FSDP holds whole layers.
    if (zero >= 3) {
      const bool deepspeed = job.training.framework == spec::Framework::DeepSpeed ||
                             job.training.zero3_param_fetch == spec::Zero3Fetch::Blocking;
      const int64_t live = std::min(params, 2 * q.largest_layer);
      m.gathered = b.weight * (deepspeed ? std::min(live, kDeepSpeedMaxLiveParams) : live);
    }
    // ZeRO-3 gathers a layer's weights when it runs: its fp8 copies exist for the layers gathered at once, not the
    // stage. torchao (torchtitan) casts its weights at each use and keeps no copies.
    const int64_t fp8_params = zero >= 3 ? 0 : std::max<int64_t>(0, params - q.bf16);
    m.fp8_weight_cache =
        static_cast<int64_t>(static_cast<double>(fp8_params) * fp8_cache_bytes_per_param(job.training));
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

std::optional<MemoryBand> memory_band(spec::Framework framework) {
  // torchtitan: the 17 peaks of the torchtitan rows of published_runs_2.csv and published_runs_blackwell.csv
  // (docs/VALIDATION-FRAMEWORKS.md and VALIDATION-BLACKWELL.md, "Peak memory").
  if (framework == spec::Framework::Torchtitan) return MemoryBand{-0.142, 0.053, 17};
  return std::nullopt;
}

}  // namespace stepsim::workload
