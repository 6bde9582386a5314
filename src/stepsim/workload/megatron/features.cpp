#include "stepsim/workload/megatron/features.hpp"

#include "stepsim/workload/static_memory.hpp"

namespace stepsim::workload::megatron {

const FrameworkProfile& megatron_core_profile() {
  static const FrameworkProfile p{};
  return p;
}

Features Features::resolve(const spec::JobSpec& job, bool sequence_parallel, int64_t act_bytes) {
  const auto& tr = job.training;
  Features f;
  f.profile = megatron_core_profile();
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
  f.fp8 = tr.precision == spec::Precision::Fp8;
  f.fp8_cast_bytes = act_bytes + 2 + (tr.fp8_recipe == spec::Fp8Recipe::Current ? act_bytes : 0);
  f.mask_bytes = job.model.hidden_dropout > 0 ? 1 : 0;
  f.ep_overlap = tr.overlap_moe_expert_parallel_comm;
  f.grad_accum_fusion = tr.gradient_accumulation_fusion;
  f.fp8_wgrad = tr.fp8_wgrad;
  f.distributed_optimizer = tr.distributed_optimizer;
  return f;
}

}  // namespace stepsim::workload::megatron
