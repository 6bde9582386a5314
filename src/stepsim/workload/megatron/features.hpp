#pragma once
// What one job asks of the framework, resolved once before any op is built: the precision policy, which overlaps
// exist, how data parallelism shards, and the framework's own constants (its profile). The modules read this value;
// none of them reads the job's training flags again. A second framework is a second profile (and the few modules
// whose structure differs), not a copy of the builder.
#include <cstdint>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::workload::megatron {

// Constants of Megatron-Core with Transformer Engine that are not the job's to choose (docs/MODEL.md).
struct FrameworkProfile {
  // Transformer Engine userbuffers (training.tp_comm_overlap): SMs its communication kernels hold beside the GEMM
  // they overlap, and the chunks of the pipelined reduce-scatter. TE's defaults and NeMo's H100 configurations
  // (userbuffers_*_h100_*): ring exchange 1 SM, bulk 2 SMs, pipeline 16 SMs in 4 splits.
  uint16_t ring_exchange_sms = 1;
  uint16_t bulk_sms = 2;
  uint16_t pipeline_sms = 16;
  int64_t pipeline_splits = 4;
  // Megatron-Core's DDP buckets only the first stage's first model chunk (elsewhere DP communication is off the
  // critical path): other chunks reduce one bucket each, once all their gradients are ready.
  bool buckets_first_chunk_only = true;
  // The dropless MoE dispatchers' host synchronisation per forward, us (moe_dispatch.cpp says how it was measured).
  double moe_host_sync_us = 100;
  // ZeRO-3 blocking fetch: host time of one per-rank copy_ after a gathered tensor, us (grad_sync.cpp).
  double zero3_host_copy_us = 7.3;
};

const FrameworkProfile& megatron_core_profile();

struct Features {
  FrameworkProfile profile;
  int64_t act_bytes = 2;     // β: bytes per activation element
  int64_t grad_bytes = 4;    // gradients reduced in fp32 unless fp16 (or said otherwise)
  int64_t weight_bytes = 2;  // parameters as gathered (fp8 under fp8_param_gather)
  double expert_load = 1.0;  // MoE: tokens the busiest rank's experts process over the balanced share
  // Transformer Engine userbuffers (tp_comm_overlap, under sequence parallelism): which of its overlaps run.
  bool tp_overlap_ag = false;          // ring-exchange all-gathers inside the column-parallel GEMMs
  bool tp_overlap_rs = false;          // the forward's pipelined reduce-scatter
  bool tp_bulk_dgrad = false;          // the input all-gather beside the dgrad GEMM
  bool tp_bulk_wgrad = false;          // the dgrad reduce-scatter beside the wgrad GEMM
  bool tp_overlap_rs_dgrad = false;    // the dgrad's reduce-scatter pipelined like the forward's
  bool zero3 = false;                  // ZeRO-3 / FSDP: parameters sharded over DP, gathered per unit and pass
  // ZeRO-2 and 3: each rank keeps only its shard of the gradients, so they cannot accumulate over micro-batches
  // locally: every micro-batch reduce-scatters each unit's gradients after its backward (DeepSpeed's stage 2 reduces
  // its buckets every micro-step; FSDP and Megatron-FSDP's optim_grads likewise), with no end-of-step reduction.
  bool shard_grads = false;
  bool zero3_blocking = false;         // ZeRO-3 fetch per parameter tensor, host-synchronised (DeepSpeed < 0.4.3)
  bool fp8 = false;                    // linear-layer GEMMs in fp8 behind cast kernels
  int64_t fp8_cast_bytes = 4;          // per element of a cast: read β, write 2 x 1 byte (current scaling reads again)
  int64_t mask_bytes = 1;              // per element of a residual dropout's stored mask (0: hidden_dropout is 0)
  bool ep_overlap = false;             // the combined 1F1B schedule (overlap_moe_expert_parallel_comm)
  bool grad_accum_fusion = true;       // wgrad accumulates into the fp32 main_grad
  bool fp8_wgrad = true;               // --no-fp8-wgrad: TE runs wgrad in the higher precision
  bool distributed_optimizer = false;  // Megatron's ZeRO-1: optimizer states (and their gradients) sharded over DP

  static Features resolve(const spec::JobSpec& job, bool sequence_parallel, int64_t act_bytes);
};

}  // namespace stepsim::workload::megatron
