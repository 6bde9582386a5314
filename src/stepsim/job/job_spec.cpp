#include "stepsim/job/job_spec.hpp"

namespace stepsim::spec {

int bytes_of(Precision p) {
  switch (p) {
    case Precision::Fp32: return 4;
    case Precision::Fp16: return 2;
    case Precision::Bf16: return 2;
    case Precision::Fp8: return 2;  // Transformer Engine keeps weights/activations in bf16; fp8 is GEMM-only
    case Precision::Nvfp4: return 2;  // likewise
  }
  return 2;
}

const char* name_of(Precision p) {
  switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::Fp16: return "fp16";
    case Precision::Bf16: return "bf16";
    case Precision::Fp8: return "fp8";
    case Precision::Nvfp4: return "nvfp4";
  }
  return "?";
}
const char* name_of(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}
const char* name_of(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::GPipe: return "gpipe";
    case PipelineSchedule::OneFOneB: return "1f1b";
    case PipelineSchedule::Interleaved1F1B: return "interleaved-1f1b";
  }
  return "?";
}
const char* name_of(Activation a) { return a == Activation::Gelu ? "gelu" : "swiglu"; }
const char* name_of(AttentionType a) {
  switch (a) {
    case AttentionType::Mha: return "mha";
    case AttentionType::Gqa: return "gqa";
    case AttentionType::Mla: return "mla";
  }
  return "?";
}
const char* name_of(CommModel m) {
  switch (m) {
    case CommModel::AlphaBeta: return "alpha-beta";
    case CommModel::Nccl: return "nccl";
    case CommModel::Flow: return "flow";
  }
  return "?";
}
const char* name_of(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::Delayed: return "delayed";
    case Fp8Recipe::Current: return "current";
    case Fp8Recipe::Blockwise: return "blockwise";
    case Fp8Recipe::Mxfp8: return "mxfp8";
  }
  return "?";
}
const char* name_of(Framework f) {
  switch (f) {
    case Framework::MegatronCore: return "megatron";
    case Framework::Torchtitan: return "torchtitan";
    case Framework::DeepSpeed: return "deepspeed";
  }
  return "?";
}
const char* name_of(CpCommType c) {
  switch (c) {
    case CpCommType::P2P: return "p2p";
    case CpCommType::AllGather: return "all_gather";
    case CpCommType::A2A: return "a2a";
    case CpCommType::A2AP2P: return "a2a+p2p";
  }
  return "?";
}
const char* name_of(RecomputeModule m) {
  switch (m) {
    case RecomputeModule::CoreAttn: return "core_attn";
    case RecomputeModule::Mlp: return "mlp";
    case RecomputeModule::Moe: return "moe";
    case RecomputeModule::MoeAct: return "moe_act";
    case RecomputeModule::SharedExperts: return "shared_experts";
    case RecomputeModule::Layernorm: return "layernorm";
    case RecomputeModule::MlaUpProj: return "mla_up_proj";
    case RecomputeModule::kCount: break;
  }
  return "?";
}
std::optional<RecomputeModule> recompute_module_named(std::string_view name) {
  for (int i = 0; i < static_cast<int>(RecomputeModule::kCount); ++i) {
    const auto m = static_cast<RecomputeModule>(i);
    if (name == name_of(m)) return m;
  }
  return std::nullopt;
}
std::string recompute_module_names() {
  std::string s;
  for (int i = 0; i < static_cast<int>(RecomputeModule::kCount); ++i)
  {
    if (i) s += ", ";
    s += name_of(static_cast<RecomputeModule>(i));
  }
  return s;
}
const char* name_of(AttentionBackend b) { return b == AttentionBackend::Flash ? "flash" : "unfused"; }
const char* name_of(OverlapModel m) {
  switch (m) {
    case OverlapModel::None: return "none";
    case OverlapModel::Coefficients: return "coefficients";
    case OverlapModel::XGBoost: return "xgboost";
    case OverlapModel::SmShare: return "sm_share";
  }
  return "?";
}

}  // namespace stepsim::spec
