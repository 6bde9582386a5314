#include "stepsim/workload/megatron/features.hpp"

#include "stepsim/workload/static_memory.hpp"

namespace stepsim::workload::megatron {

const FrameworkProfile& megatron_core_profile() {
  static const FrameworkProfile p{};
  return p;
}

// torchtitan's Llama 3 (torchtitan/models/llama/model.py and models/norms.py at 9dec370, Dec 2024), eager: every
// PyTorch op a kernel that reads its inputs and writes its output; autograd's backward likewise (docs/MODEL.md
// "Frameworks" counts each op). Compiled: Inductor's fused kernels for the same graph.
const FrameworkProfile& torchtitan_profile(bool compiled) {
  static const FrameworkProfile eager = [] {
    FrameworkProfile p;
    // RMSNorm in fp32: x.float(), pow, mean, x*rsqrt, type_as, *weight; backward: each op's gradient, the two paths
    // into x summed, the cast back.
    p.kernels.norm = {{4, 28}, {8, 76}};
    p.kernels.norm_fused = false;
    p.kernels.residual_add = {{3, 0}, {3, 0}};  // h = x + f(x): a plain add; backward sums the two gradients into x
    p.kernels.swiglu = {{5, 0}, {9, 0}};        // silu(w1 x) then * w3 x; backward: mul's two products, silu's
    p.kernels.gelu = p.kernels.swiglu;          // (torchtitan's Llama has SwiGLU only; input validation refuses gelu)
    p.kernels.rotary = {{2, 16}, {2, 16}};      // float(), complex multiply, type_as (and their gradients)
    p.kernels.repeat_kv = {{1, 0}, {1, 0}};     // expand+reshape copies K/V to every head; backward sums them back
    p.pytorch_ring = true;
    p.dtensor_tp = true;
    p.recompute_stops_early = true;
    p.head_kernels = p.kernels;
    return p;
  }();
  static const FrameworkProfile fused = [] {
    FrameworkProfile p = eager;
    // One kernel forward; backward one pass for dx that also writes dweight's per-block partial sums (reduced by a
    // small second kernel). Inductor's norm kernels stream near the elementwise rate, not at PyTorch's norm kernels'
    // (data/measurements/h200-sxm/llama_block.csv: 0.69 / 0.64 of 4.8 TB/s at 2β / 3β), so they are timed as
    // elementwise kernels.
    p.kernels.norm = {{2, 0}, {3, 0}};
    p.kernels.norm_fused = false;
    p.kernels.residual_add = {{2, 0}, {1, 0}};  // fused into the next norm (reads both inputs, writes the sum)
    p.kernels.swiglu = {{3, 0}, {5, 0}};
    p.kernels.gelu = p.kernels.swiglu;
    p.ring_traced = true;
    // Inductor generates no code for complex arithmetic: the complex multiply stays PyTorch's kernel, with the casts
    // into and out of it fused into their own kernels, so RoPE moves the eager bytes (the same file: compiled RoPE
    // takes 0.79x the eager time, not the 0.2x a single fused kernel would).
    return p;
  }();
  return compiled ? fused : eager;
}

Features Features::resolve(const spec::JobSpec& job, bool sequence_parallel, int64_t act_bytes) {
  const auto& tr = job.training;
  Features f;
  const bool deepspeed = tr.framework == spec::Framework::DeepSpeed;
  f.profile = tr.framework == spec::Framework::Torchtitan ? torchtitan_profile(tr.compile)
              : deepspeed                                  ? torchtitan_profile(false)  // HF's eager Llama: the same ops
                                                           : megatron_core_profile();
  // HF's gradient checkpointing is reentrant by default (the whole layer re-runs), and DeepSpeed has no DTensor TP.
  if (deepspeed) f.profile.dtensor_tp = f.profile.recompute_stops_early = false;
  f.act_bytes = act_bytes;
  const BytesPerParam bpp = bytes_per_param(tr);
  f.grad_bytes = bpp.gradient;
  f.weight_bytes = bpp.weight;
  f.expert_load = job.model.moe ? job.model.moe->expert_load() : 1.0;
  const bool userbuffers = tr.tp_comm_overlap && sequence_parallel;
  f.tp_overlap_ag = userbuffers && tr.tp_comm_overlap_ag;
  f.tp_overlap_rs = userbuffers && tr.tp_comm_overlap_rs;
  f.tp_bulk_dgrad = userbuffers && tr.tp_comm_bulk_dgrad;
  f.tp_overlap_rs_dgrad = userbuffers && tr.tp_comm_overlap_rs_dgrad;
  f.tp_bulk_wgrad = userbuffers && tr.tp_comm_bulk_wgrad && !f.tp_overlap_rs_dgrad;
  f.zero3 = tr.zero_stage == 3;
  f.shard_grads = tr.zero_stage >= 2;
  f.zero3_blocking = f.zero3 && tr.zero3_param_fetch == spec::Zero3Fetch::Blocking;
  f.fp8 = spec::quantized_gemms(tr.precision);
  if (tr.precision == spec::Precision::Nvfp4) {
    // TE's NVFP4BlockScaling: a per-tensor amax pass (the second-level fp32 scale), then one kernel writing the
    // rowwise and columnwise e2m1 copies (half a byte each) with an e4m3 scale per 16 values; the random Hadamard
    // transform of the wgrad operands and the stochastic rounding of gradients run inside that kernel.
    f.fp8_cast_bytes = 2.0 * act_bytes + 2 * (0.5 + 1.0 / 16);
    f.fp8_saved_bytes = 0.5 + 1.0 / 16;
  } else if (tr.fp8_recipe == spec::Fp8Recipe::Mxfp8) {
    // MXFP8: the scale of each 32-value block is found in the cast kernel itself (no amax pass); both copies carry
    // an e8m0 scale per 32 values.
    f.fp8_cast_bytes = act_bytes + 2 * (1 + 1.0 / 32);
    f.fp8_saved_bytes = 1 + 1.0 / 32;
  } else {
    f.fp8_cast_bytes = static_cast<double>(act_bytes + 2 + (tr.fp8_recipe == spec::Fp8Recipe::Current ? act_bytes : 0));
  }
  f.mask_bytes = job.model.hidden_dropout > 0 ? 1 : 0;
  f.ep_overlap = tr.overlap_moe_expert_parallel_comm;
  f.grad_accum_fusion = tr.gradient_accumulation_fusion;
  f.fp8_wgrad = tr.fp8_wgrad;
  f.distributed_optimizer = tr.distributed_optimizer;
  f.op_level_sac = tr.op_level_sac();
  f.fsdp2_copy_out = f.zero3 && tr.framework == spec::Framework::Torchtitan;
  f.grads_in_param_dtype = tr.framework != spec::Framework::MegatronCore;
  if (deepspeed) {
    // ZeRO-3 reduce-scatters in its communication dtype, the parameters' unless the config sets
    // communication_data_type (DeepSpeedEngine.communication_data_type), then copies into the fp32 partition.
    f.grad_bytes = f.weight_bytes;
    f.reduce_bucket = tr.reduce_bucket_size;
    f.profile.zero3_module_hook_us = tr.zero3_hook_us;
  }
  return f;
}

}  // namespace stepsim::workload::megatron
