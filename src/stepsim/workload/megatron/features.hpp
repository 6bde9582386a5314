#pragma once
// What one job asks of the framework, resolved once before any op is built: the precision policy, which overlaps
// exist, how data parallelism shards, and the framework's own constants (its profile). The modules read this value;
// none of them reads the job's training flags again. A second framework is a second profile (and the few modules
// whose structure differs), not a copy of the builder.
#include <cstdint>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::workload::megatron {

// Bytes a memory-bound kernel site moves per element of its tensor: `beta` times the activation size plus `fp32` bytes
// (what an eager op computing in fp32 reads and writes beside the bf16 tensors).
struct SiteBytes {
  int beta = 0;
  int fp32 = 0;
  int64_t per_element(int64_t act_bytes) const { return beta * act_bytes + fp32; }
};
struct SiteTraffic {
  SiteBytes fwd;
  SiteBytes bwd;
};

// The memory-bound kernels of a transformer layer as a framework launches them, per element of the tensor each
// works on (docs/MODEL.md "Frameworks" derives every figure from the framework's code).
struct LayerKernels {
  SiteTraffic norm{{2, 0}, {3, 0}};          // per hidden element: Transformer Engine's fused LayerNorm / RMSNorm
  SiteTraffic residual_add{{4, 0}, {3, 0}};  // per hidden element: Megatron's fused bias-dropout-add (mask apart)
  SiteTraffic swiglu{{3, 0}, {5, 0}};        // per element of the FFN's output width (ffn_hidden_size)
  SiteTraffic gelu{{2, 0}, {3, 0}};          // likewise
  SiteTraffic rotary{{0, 0}, {0, 0}};        // per element of Q and K (Transformer Engine's RoPE: in calibration)
  SiteTraffic repeat_kv{{0, 0}, {0, 0}};     // per element of K and V expanded to all query heads (GQA only)
  // The norm is one fused kernel (timed with the norm kernels' measured efficiency) rather than a chain of plain
  // elementwise and reduction kernels (timed as elementwise ones).
  bool norm_fused = true;
};

// Constants of Megatron-Core with Transformer Engine that are not the job's to choose (docs/MODEL.md).
struct FrameworkProfile {
  LayerKernels kernels;
  // The kernels outside the transformer layers (the final norm): torch.compile per block leaves them eager.
  LayerKernels head_kernels;
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
  // DeepSpeed ZeRO-3: the host time of its Python hooks per module and pass (fetch, prefetch and release before and
  // after the module; in backward also each parameter's gradient hook), us, during which the GPU waits (0 = no such
  // hooks). Modules per unit of Hugging Face's LlamaForCausalLM: a decoder layer and its 13 submodules (self_attn,
  // q/k/v/o_proj, rotary_emb, mlp, gate/up/down_proj, act_fn, two RMSNorms); the embedding (embed_tokens, LlamaModel,
  // LlamaForCausalLM); the head (norm, lm_head). training.zero3_hook_us gives it (job_spec.hpp says how it was fitted).
  double zero3_module_hook_us = 0;
  // Context parallelism as PyTorch runs it (torch.distributed.tensor.experimental, torchtitan's CP; pytorch_ring.cpp):
  // K/V all-gathered once per pass, each later step's output merged in fp32, dQ/dK/dV accumulated in fp32 and dK/dV
  // rotated in fp32. Off: Transformer Engine's double-buffered ring.
  bool pytorch_ring = false;
  // The ring traced into a compiled graph (torch.compile, fullgraph per block): a functional collective is traced with
  // its wait_tensor right after it and Inductor does not move compute between them (reorder_for_compute_comm_overlap
  // is off by default), so the K/V all-gather holds the first step and each dK/dV exchange the next; and the K/V
  // concatenations of the later steps, which the all-gather rotater ignores (it gathers once), are dead code. Eager,
  // a collective is waited where its result is first used and every concatenation runs.
  bool ring_traced = false;
  // Tensor parallelism as PyTorch's DTensor runs it (torchtitan's plan over [batch, sequence, hidden] activations,
  // sequence-parallel shards Shard(1)): a column-parallel linear saves its all-gathered input for the weight gradient
  // (no backward re-gather), and the functional collectives, which gather and scatter along dim 0, rearrange the
  // sequence dimension with a chunk + cat copy of the whole tensor (torch.distributed._functional_collectives
  // all_gather_tensor / reduce_scatter_tensor): after each all-gather and before each reduce-scatter. (PyTorch from
  // December 2025, PR 169404, gathers a micro-batch of one sequence into a view: not modelled.)
  bool dtensor_tp = false;
  // torch.utils.checkpoint without reentrance, and the compiled partitioner, recompute only what the backward needs:
  // a fully recomputed block stops at its last saved tensor, the input of the MLP's down projection, so that GEMM,
  // its reduce-scatter and the residual add do not re-run (Megatron's CheckpointFunction re-runs the whole layer).
  bool recompute_stops_early = false;
  int layer_modules = 14;
  int embedding_modules = 3;
  int head_modules = 2;
};

const FrameworkProfile& megatron_core_profile();
// torchtitan (Llama 3 model code, FSDP2): PyTorch eager kernels, or Inductor's fusions under per-block torch.compile.
const FrameworkProfile& torchtitan_profile(bool compiled);

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
  bool fp8 = false;                    // linear-layer GEMMs quantized (fp8 or nvfp4) behind cast kernels
  // Per element of a quantize kernel (features.cpp says per recipe): read β, write the rowwise and columnwise copies
  // with their block scales, and read β once more where a per-tensor amax comes first (current scaling, NVFP4).
  double fp8_cast_bytes = 4;
  // Per element of a linear layer's input saved for the weight gradient: its columnwise quantized copy.
  double fp8_saved_bytes = 1;
  int64_t mask_bytes = 1;              // per element of a residual dropout's stored mask (0: hidden_dropout is 0)
  bool ep_overlap = false;             // the combined 1F1B schedule (overlap_moe_expert_parallel_comm)
  bool grad_accum_fusion = true;       // wgrad accumulates into the fp32 main_grad
  bool fp8_wgrad = true;               // --no-fp8-wgrad: TE runs wgrad in the higher precision
  bool distributed_optimizer = false;  // Megatron's ZeRO-1: optimizer states (and their gradients) sharded over DP
  bool op_level_sac = false;           // torchtitan's selective recompute (TrainingSpec::op_level_sac)
  // FSDP2 (torchtitan under ZeRO-3): after each all-gather the flat buffer is copied out into the unit's parameters
  // (split_with_sizes_copy) on the compute stream.
  bool fsdp2_copy_out = false;
  // torchtitan: autograd writes each weight gradient in the parameter dtype (no fp32 main_grad buffer); over several
  // micro-batches AccumulateGrad adds it into .grad.
  bool grads_in_param_dtype = false;
  // DeepSpeed ZeRO-3: gradients reduce-scattered in buckets of this many elements in backward order (0: one
  // reduce-scatter per unit, as FSDP).
  int64_t reduce_bucket = 0;

  static Features resolve(const spec::JobSpec& job, bool sequence_parallel, int64_t act_bytes);
};

}  // namespace stepsim::workload::megatron
