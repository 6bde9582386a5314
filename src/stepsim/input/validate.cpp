// Cross-field rules of a job: what Megatron-LM itself asserts at start-up, plus what the simulator needs.
#include <cstdio>
#include <numeric>
#include <string>
#include <utility>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/job/pipeline_split.hpp"

namespace stepsim::spec {

namespace {

std::string s(int64_t x) { return std::to_string(x); }

}  // namespace

const char* ep_overlap_refusal(const JobSpec& job) {
  const ParallelismSpec& p = job.parallelism;
  const TrainingSpec& t = job.training;
  if (!job.model.moe || p.expert < 2) return "needs an MoE model with parallelism.expert > 1";
  if (job.model.moe->token_dispatcher == TokenDispatcher::AllGather)
    return "works with the alltoall or flex token dispatcher only (Megatron-Core asserts it)";
  if (job.model.moe->shared_expert_overlap)
    return "excludes model.moe.shared_expert_overlap (Megatron-Core asserts it: the combined schedule places the "
           "shared expert itself); set it false";
  if (t.recompute == Recompute::Full) return "cannot run with recompute: full (Megatron-Core asserts it)";
  if (t.recomputes(RecomputeModule::Moe))
    return "cannot run with 'moe' in training.recompute_modules (Megatron-Core asserts it)";
  if (job.model.mtp_layers > 1) return "supports at most one multi-token prediction layer (Megatron-Core asserts it)";
  if (p.pipeline > 1 && p.schedule != PipelineSchedule::Interleaved1F1B)
    return "with pipeline > 1 needs the interleaved schedule (parallelism.virtual_stages >= 2; Megatron-Core "
           "asserts it)";
  if (t.zero_stage == 3 || t.activation_offload_layers > 0)
    return "is not modelled together with zero_stage 3 or activation_offload_layers";
  return nullptr;
}

namespace {

// The key of a model that is not a Llama (RMSNorm, RoPE, SwiGLU, no biases), or nullptr: what a framework profile of
// Llama model code does not cover.
const char* not_llama(const ModelSpec& m) {
  if (m.normalization != Normalization::RmsNorm) return "model.normalization";
  if (m.position_embedding != PositionEmbedding::Rope) return "model.position_embedding";
  if (m.activation != Activation::Swiglu) return "model.activation";
  if (m.add_bias_linear) return "model.add_bias_linear";
  return nullptr;
}

// Under framework torchtitan, what its profile (torchtitan's Llama 3 model code) does not cover: the key and why.
std::pair<const char*, const char*> torchtitan_refusal(const ModelSpec& m, const ParallelismSpec& p) {
  if (const char* key = not_llama(m)) return {key, "torchtitan's profile is its Llama 3 model (RMSNorm, RoPE, SwiGLU, no biases)"};
  if (m.moe) return {"model.moe", "torchtitan's MoE models are not modelled yet (framework: megatron costs them)"};
  if (m.attention == AttentionType::Mla) return {"model.attention", "torchtitan's MLA is not modelled yet"};
  if (m.mtp_layers > 0) return {"model.mtp_layers", "torchtitan's Llama 3 has no multi-token prediction"};
  if (m.window_size > 0) return {"model.attention.window_size", "torchtitan's Llama 3 has no sliding-window attention"};
  if (p.context > 1 && p.cp_comm_type != CpCommType::P2P)
    return {"parallelism.cp_comm_type", "torchtitan's context parallelism is PyTorch's ring attention: p2p only"};
  return {nullptr, nullptr};
}

// Under framework deepspeed, what its profile (DeepSpeed ZeRO-3 around Hugging Face's LlamaForCausalLM, data
// parallelism only) does not cover: the key and why.
std::pair<const char*, const char*> deepspeed_refusal(const ModelSpec& m, const ParallelismSpec& p) {
  if (const char* key = not_llama(m)) {
    return {key, "DeepSpeed's profile is Hugging Face's Llama model (RMSNorm, RoPE, SwiGLU, no biases)"};
  }
  if (m.moe) return {"model.moe", "DeepSpeed's MoE (a hook per expert) is not modelled yet"};
  if (m.attention == AttentionType::Mla) return {"model.attention", "DeepSpeed's profile has no MLA"};
  if (m.mtp_layers > 0) return {"model.mtp_layers", "Hugging Face's Llama has no multi-token prediction"};
  if (m.window_size > 0) {
    return {"model.attention.window_size", "DeepSpeed's profile is Hugging Face's Llama: no sliding window"};
  }
  const char* dp_only = "DeepSpeed's profile is ZeRO-3 data parallelism around a Hugging Face model (no tensor, "
                        "pipeline, context or expert parallelism in it)";
  if (p.tensor > 1) return {"parallelism.tensor", dp_only};
  if (p.pipeline > 1) return {"parallelism.pipeline", dp_only};
  if (p.context > 1) return {"parallelism.context", dp_only};
  return {nullptr, nullptr};
}

}  // namespace

void validate(const hw::GpuCatalog& gpus, JobSpec& job) {
  const std::string& src = job.source;
  auto fail = [&](const std::string& key, const std::string& rule) {
    throw InputError(src + ": key " + key + ": " + rule);
  };
  ModelSpec& m = job.model;
  ParallelismSpec& p = job.parallelism;
  TrainingSpec& t = job.training;
  ClusterSpec& c = job.cluster;

  if (t.framework == Framework::Torchtitan) {
    if (const auto [key, why] = torchtitan_refusal(m, p); key) fail(key, why);
  }
  if (t.framework == Framework::DeepSpeed) {
    if (const auto [key, why] = deepspeed_refusal(m, p); key) fail(key, why);
  }
  // --- model
  if (m.num_query_groups == 0) m.num_query_groups = m.num_attention_heads;
  if (m.num_attention_heads % m.num_query_groups != 0) {
    fail("model.num_query_groups", s(m.num_query_groups) + " must divide model.num_attention_heads " +
                                       s(m.num_attention_heads));
  }
  if (m.attention == AttentionType::Mha && m.num_query_groups != m.num_attention_heads) {
    fail("model.attention.type", "mha needs num_query_groups == num_attention_heads; use gqa");
  }
  if (m.kv_channels == 0) {
    if (m.attention != AttentionType::Mla && m.hidden_size % m.num_attention_heads != 0) {
      fail("model.hidden_size", s(m.hidden_size) + " must be divisible by num_attention_heads " +
                                    s(m.num_attention_heads) + " (or give model.kv_channels)");
    }
    m.kv_channels = m.hidden_size / m.num_attention_heads;
    if (m.kv_channels == 0) m.kv_channels = 1;
  }
  // Transformer Engine runs a sliding window under context parallelism only with its all-to-all exchange; the ring
  // blocks a window skips are not modelled.
  if (m.window_size > 0 && p.context > 1) {
    fail("model.attention.window_size", "sliding-window attention under context parallelism is not modelled");
  }
  if (m.moe && m.moe->first_k_dense >= m.num_layers) {
    fail("model.moe.first_k_dense", "must be less than model.num_layers " + s(m.num_layers));
  }

  // --- cluster
  const hw::GpuSpec* found = nullptr;
  try {
    found = &gpus.find(c.gpu);
  } catch (const InputError& e) {
    throw InputError(src + ": " + e.what());
  }
  const hw::GpuSpec& gpu = *found;
  c.gpu = gpu.name;
  if (c.num_gpus > c.gpus_per_node && c.num_gpus % c.gpus_per_node != 0) {
    // An NVLink domain larger than a node (an NVL72 rack) may hold part of a job: say how to describe that.
    const std::string rack = c.gpus_per_node > 8
                                 ? " (a job filling part of each NVLink domain: give the hosts as gpus_per_node and "
                                   "the domain as cluster.nvlink_domain, e.g. 4 and 72 for NVL72 racks)"
                                 : "";
    fail("cluster.num_gpus",
         s(c.num_gpus) + " must be a multiple of cluster.gpus_per_node " + s(c.gpus_per_node) + rack);
  }
  if (!c.slow_ranks.empty() && c.slow_ranks.rbegin()->first >= c.num_gpus) {
    fail("cluster.slow_ranks." + s(c.slow_ranks.rbegin()->first), "rank must be below cluster.num_gpus " + s(c.num_gpus));
  }

  // --- parallelism
  const int64_t tpc = int64_t{p.tensor} * p.pipeline * p.context;
  if (p.data == 0) {
    if (c.num_gpus % tpc != 0) {
      fail("parallelism", "tensor " + s(p.tensor) + " x pipeline " + s(p.pipeline) + " x context " + s(p.context) +
                              " = " + s(tpc) + " does not divide cluster.num_gpus " + s(c.num_gpus));
    }
    p.data = static_cast<int>(c.num_gpus / tpc);
  } else if (tpc > c.num_gpus || tpc * p.data != c.num_gpus) {
    // Four degrees of up to 2^20 each overflow int64 (fuzz finding): multiply only when tpc is small.
    const std::string product = tpc > c.num_gpus ? "more than " + s(c.num_gpus) : s(tpc * p.data);
    fail("parallelism", "tensor " + s(p.tensor) + " x pipeline " + s(p.pipeline) + " x context " + s(p.context) +
                            " x data " + s(p.data) + " = " + product + " does not equal cluster.num_gpus " +
                            s(c.num_gpus));
  }
  if (m.num_attention_heads % p.tensor != 0) {
    fail("parallelism.tensor", s(p.tensor) + " does not divide model.num_attention_heads " + s(m.num_attention_heads));
  }
  if (m.attention != AttentionType::Mla && m.num_query_groups % p.tensor != 0) {
    fail("parallelism.tensor", s(p.tensor) + " does not divide model.num_query_groups " + s(m.num_query_groups));
  }
  if (m.ffn_hidden_size % p.tensor != 0) {
    fail("parallelism.tensor", s(p.tensor) + " does not divide model.ffn_hidden_size " + s(m.ffn_hidden_size));
  }
  if (p.tensor == 1) p.sequence_parallel = false;  // Megatron-LM turns it off silently at TP 1
  if (p.sequence_parallel && m.seq_length % (int64_t{p.tensor} * p.context) != 0) {
    fail("model.seq_length", s(m.seq_length) + " must be divisible by tensor x context " +
                                 s(int64_t{p.tensor} * p.context) + " under sequence parallelism");
  }
  if (p.context > 1 && m.seq_length % (2 * int64_t{p.context}) != 0) {
    fail("model.seq_length", s(m.seq_length) + " must be divisible by 2 x context " + s(2 * int64_t{p.context}) +
                                 " (context parallelism splits the sequence into 2 x context chunks)");
  }
  const auto& hs = p.hierarchical_context_parallel_sizes;
  if (p.cp_comm_type == CpCommType::A2AP2P) {
    if (hs.size() != 2 || int64_t{hs[0]} * hs[1] != p.context) {
      fail("parallelism.hierarchical_context_parallel_sizes",
           "a2a+p2p needs two sizes [all-to-all group, ring] whose product is parallelism.context " + s(p.context));
    }
  } else if (!hs.empty()) {
    fail("parallelism.hierarchical_context_parallel_sizes", "applies only to cp_comm_type a2a+p2p");
  }
  // Ulysses (a2a over the CP group, or a2a+p2p over its all-to-all level) gives each rank of its group all of the group's
  // sequence for heads / (tensor x group) heads: the group must divide the heads and the K/V heads.
  const bool hierarchical = p.cp_comm_type == CpCommType::A2AP2P;
  const int ulysses = hierarchical ? hs[0] : p.cp_comm_type == CpCommType::A2A && p.context > 1 ? p.context : 0;
  if (ulysses > 0) {
    const int64_t tu = int64_t{p.tensor} * ulysses;
    const int64_t kv = m.attention == AttentionType::Mla ? m.num_attention_heads : m.num_query_groups;
    if (m.num_attention_heads % tu != 0 || kv % tu != 0) {
      fail(hierarchical ? "parallelism.hierarchical_context_parallel_sizes" : "parallelism.cp_comm_type",
           std::string(hierarchical ? "a2a+p2p needs tensor x the all-to-all group " : "a2a needs tensor x context ") +
               s(tu) + " to divide the attention heads " + s(m.num_attention_heads) + " and the K/V heads " + s(kv) +
               (hierarchical ? " (heads are split over that group)" : " (heads are split over the context ranks); use p2p"));
    }
  }
  if (p.expert > 1) {
    if (!m.moe) fail("parallelism.expert", "is " + s(p.expert) + " but the model has no moe section");
    if (m.moe->num_experts % p.expert != 0) {
      fail("parallelism.expert", s(p.expert) + " does not divide model.moe.num_experts " + s(m.moe->num_experts));
    }
    if (p.tensor > 1 && !p.sequence_parallel) {
      fail("parallelism.sequence_parallel", "must be true when expert and tensor parallelism are combined");
    }
  }
  // Expert tensor parallel size: 0 means tensor (not written back: the planner re-validates jobs with other TP).
  const int et = p.expert_tensor > 0 ? p.expert_tensor : p.tensor;
  if (et != p.tensor && p.tensor > 1 && !p.sequence_parallel) {
    fail("parallelism.sequence_parallel", "must be true when expert_tensor differs from tensor (the tokens of a "
                                          "tensor-parallel group are dispatched from their sequence shards)");
  }
  {
    const int64_t stage_ranks = int64_t{p.tensor} * p.context * p.data;
    if (stage_ranks % (int64_t{p.expert} * et) != 0) {
      fail(et != p.tensor ? "parallelism.expert_tensor" : "parallelism.expert",
           "expert " + s(p.expert) + " x expert_tensor " + s(et) + " does not divide tensor x context x "
           "data " + s(stage_ranks) + " (expert groups are formed from the ranks of a pipeline stage)");
    }
  }
  if (m.moe && m.moe->ffn_hidden_size % et != 0) {
    fail(et != p.tensor ? "parallelism.expert_tensor" : "parallelism.tensor",
         s(et) + " does not divide model.moe.ffn_hidden_size " + s(m.moe->ffn_hidden_size));
  }

  // Pipeline stages and model chunks.
  if (p.virtual_stages > 1 && p.schedule != PipelineSchedule::Interleaved1F1B) {
    fail("parallelism.schedule", "virtual_stages " + s(p.virtual_stages) + " needs schedule interleaved-1f1b");
  }
  if (p.schedule == PipelineSchedule::Interleaved1F1B && p.virtual_stages < 2) {
    fail("parallelism.virtual_stages", "interleaved-1f1b needs virtual_stages >= 2");
  }
  if (p.schedule == PipelineSchedule::Interleaved1F1B && p.pipeline < 2) {
    fail("parallelism.pipeline", "interleaved-1f1b needs pipeline >= 2");
  }
  {
    PipelineSplitRequest req;
    req.num_layers = m.num_layers;
    req.pipeline = p.pipeline;
    req.virtual_stages = p.virtual_stages;
    req.pipeline_layers = p.pipeline_layers;
    req.first_stage_layers = p.first_stage_layers;
    req.last_stage_layers = p.last_stage_layers;
    req.account_for_embedding = p.account_for_embedding_in_pipeline_split;
    req.account_for_loss = p.account_for_loss_in_pipeline_split;
    req.mtp_layers = m.mtp_layers;
    req.layout = p.pipeline_layout;
    PipelineSplit split = make_pipeline_split(req, src);
    p.pipeline_layers = std::move(split.layers);
    p.pipeline_split_rule = split.rule;
  }

  // --- training
  const int64_t per_step = int64_t{t.micro_batch_size} * p.data;
  if (t.global_batch_size % per_step != 0) {
    fail("training.global_batch_size", s(t.global_batch_size) + " is not divisible by micro_batch_size x data = " +
                                           s(t.micro_batch_size) + " x " + s(p.data));
  }
  if (p.schedule == PipelineSchedule::Interleaved1F1B && job.num_microbatches() % p.pipeline != 0) {
    fail("training.global_batch_size", "interleaved-1f1b needs the number of micro-batches (" +
                                           s(job.num_microbatches()) + ") to be a multiple of pipeline " +
                                           s(p.pipeline));
  }
  if (t.precision != Precision::Fp8 && (t.fp8_param_gather || t.fp8_recipe != Fp8Recipe::Delayed)) {
    fail(t.fp8_param_gather ? "training.fp8_param_gather" : "training.fp8_recipe", "needs training.precision: fp8");
  }
  if (t.precision != Precision::Fp8 && !t.fp8_wgrad) fail("training.fp8_wgrad", "needs training.precision: fp8");
  // Megatron's --first-last-layers-bf16 keeps those layers out of fp8 and of NVFP4 alike.
  if (!spec::quantized_gemms(t.precision) && (t.fp8_bf16_first_layers > 0 || t.fp8_bf16_last_layers > 0)) {
    fail(t.fp8_bf16_first_layers > 0 ? "training.fp8_bf16_first_layers" : "training.fp8_bf16_last_layers",
         "needs training.precision: fp8 or nvfp4");
  }
  if (int64_t{t.fp8_bf16_first_layers} + t.fp8_bf16_last_layers > m.num_layers) {
    fail("training.fp8_bf16_last_layers", "fp8_bf16_first_layers + fp8_bf16_last_layers (" +
                                              s(int64_t{t.fp8_bf16_first_layers} + t.fp8_bf16_last_layers) +
                                              ") exceed model.num_layers (" + s(m.num_layers) + ")");
  }
  if (t.fp8_recipe == Fp8Recipe::Mxfp8 && gpu.arch != hw::GpuArch::Blackwell) {
    fail("training.fp8_recipe", "mxfp8 needs a Blackwell GPU (" + gpu.name + " is " + hw::name_of(gpu.arch) + ")");
  }
  if (t.precision == Precision::Fp8 && gpu.fp8_flops <= 0) {
    fail("training.precision", "fp8 is not supported by GPU " + gpu.name);
  }
  if (t.precision == Precision::Nvfp4 && gpu.fp4_flops <= 0) {
    fail("training.precision", "nvfp4 needs FP4 tensor cores (Blackwell; data/gpus.yaml fp4_tflops): GPU " + gpu.name +
                                   " has none");
  }

  // --- size: the workload builder and the memory model count parameters and bytes in int64. A job far
  // beyond any real one (fuzz finding: hidden_size 2^24 x tokens 2^40 overflowed in the workload builder
  // and model_dims.cpp) is refused here. Conservative upper bounds, in double so they cannot overflow.
  {
    const double h = static_cast<double>(m.hidden_size), heads = m.num_attention_heads;
    const double gate = m.activation == Activation::Swiglu ? 2 : 1;
    const double ffn = static_cast<double>(m.ffn_hidden_size);
    double width = 0, up_params = 0;  // widths of one layer's tensors; MLA up-projection parameters
    if (m.attention == AttentionType::Mla) {
      const MlaSpec& a = m.mla;
      const double dqk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
      const double dv = static_cast<double>(a.v_head_dim);
      width = static_cast<double>(a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) + heads * (2 * dqk + 2 * dv);
      up_params = static_cast<double>(a.q_lora_rank) * heads * dqk +
                  static_cast<double>(a.kv_lora_rank) * heads * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim);
    } else {
      width = (2 * heads + 2.0 * m.num_query_groups) * static_cast<double>(m.kv_channels);  // q, k, v, out
    }
    width += (gate + 1) * ffn;
    double layer_params = h * width + up_params;
    if (m.moe) {
      const double experts = m.moe->num_experts, fe = static_cast<double>(m.moe->ffn_hidden_size);
      const double fs = static_cast<double>(m.moe->shared_expert_ffn_hidden_size);
      const double routed = m.moe->topk * m.moe->capacity_factor.value_or(1.0);
      width += experts + routed * (h + (gate + 1) * fe) + (gate + 1) * fs;
      layer_params += h * (experts + experts * (gate + 1) * fe + (gate + 1) * fs);
    }
    width += h;
    const double vocab = static_cast<double>(m.vocab_size) + 128.0 * p.tensor;  // padded
    const double seq = static_cast<double>(m.seq_length);
    const double params = m.num_layers * layer_params + 2 * vocab * h + seq * h;
    const double elements = static_cast<double>(job.num_microbatches()) * t.micro_batch_size * seq *
                            (m.num_layers * width + vocab + h);
    auto g = [](double x) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3g", x);
      return std::string(buf);
    };
    if (params > 0x1p48) {
      fail("model", "has about " + g(params) + " parameters; more than 2^48 cannot be simulated (64-bit counts)");
    }
    if (elements > 0x1p54) {
      fail("training", "one step stores about " + g(elements) +
                           " activation elements (micro-batches x micro_batch_size x seq_length x layer widths); "
                           "more than 2^54 cannot be simulated (64-bit counts)");
    }
  }

  // Features whose effect this version does not model are refused rather than silently ignored.
  if (t.zero_stage >= 1) t.distributed_optimizer = true;
  else if (t.distributed_optimizer) t.zero_stage = 1;
  if (t.zero_stage == 3 && t.overlap_param_gather) {
    fail("training.overlap_param_gather", "does not apply to zero_stage 3 (its parameters are gathered per layer, "
                                          "prefetched one layer ahead); set false");
  }
  if (t.zero1_grad_all_reduce && (!t.distributed_optimizer || t.zero_stage != 1)) {
    fail("training.zero1_grad_reduce", "all_reduce applies to the distributed optimizer at ZeRO stage 1 (DeepSpeed's "
                                       "pipeline engine); the other stages shard the gradients or keep them whole");
  }
  if (t.zero_stage != 3 && t.zero3_param_fetch != Zero3Fetch::Prefetch) {
    fail("training.zero3_param_fetch", "applies to zero_stage 3 only (the other stages keep whole parameters)");
  }
  if (t.attention_backend == AttentionBackend::Unfused && p.context > 1) {
    fail("training.attention_backend", "unfused attention cannot run with context parallelism (Megatron's context "
                                       "parallelism runs on Transformer Engine's fused attention); use flash");
  }
  if (t.tp_comm_overlap && p.tensor > 1 && !p.sequence_parallel) {
    fail("training.tp_comm_overlap", "needs parallelism.sequence_parallel: true (Megatron-LM asserts it: userbuffers "
                                     "overlap the sequence-parallel all-gathers and reduce-scatters)");
  }
  if (job.model.moe && (job.model.moe->router_num_groups > 0 || job.model.moe->router_group_topk > 0)) {
    const MoeSpec& moe = *job.model.moe;
    const char* k = "model.moe.router_num_groups";
    if (moe.router_num_groups == 0 || moe.router_group_topk == 0)
      fail(moe.router_num_groups == 0 ? k : "model.moe.router_group_topk",
           "router_num_groups and router_group_topk go together (group-limited routing)");
    if (moe.num_experts % moe.router_num_groups != 0)
      fail(k, s(moe.router_num_groups) + " does not divide model.moe.num_experts " + s(moe.num_experts));
    if (moe.router_group_topk > moe.router_num_groups)
      fail("model.moe.router_group_topk", s(moe.router_group_topk) + " exceeds router_num_groups " +
                                              s(moe.router_num_groups));
    if (int64_t{moe.router_group_topk} * (moe.num_experts / moe.router_num_groups) < moe.topk)
      fail("model.moe.router_group_topk", "the chosen groups hold fewer experts than topk " + s(moe.topk));
  }
  if (job.model.moe && job.model.moe->shared_expert_overlap) {
    if (job.model.moe->shared_expert_ffn_hidden_size == 0)
      fail("model.moe.shared_expert_overlap", "needs a shared expert (model.moe.shared_expert_ffn_hidden_size > 0)");
    if (job.model.moe->token_dispatcher == TokenDispatcher::AllGather)
      fail("model.moe.shared_expert_overlap", "works with the alltoall or flex token dispatcher only (Megatron-Core "
                                              "raises the same error)");
  }
  // Megatron-Core's own preconditions for the combined 1F1B schedule (TransformerConfig.__post_init__), and what this
  // model does not combine with it.
  if (t.overlap_moe_expert_parallel_comm) {
    if (const char* why = ep_overlap_refusal(job)) fail("training.overlap_moe_expert_parallel_comm", why);
  }
  if (t.delay_wgrad_compute && !t.overlap_moe_expert_parallel_comm) {
    fail("training.delay_wgrad_compute", "needs training.overlap_moe_expert_parallel_comm: true (Megatron-Core "
                                         "asserts it)");
  }
  if (t.recompute != Recompute::Selective && t.recompute_modules != module_bit(RecomputeModule::CoreAttn)) {
    fail("training.recompute_modules", "applies to recompute: selective only (Megatron-Core reads it with "
                                       "--recompute-granularity selective)");
  }
  if (t.recompute == Recompute::Selective) {
    const bool moe = job.model.moe.has_value();
    if (t.recomputes(RecomputeModule::Moe) && !moe) fail("training.recompute_modules", "'moe' needs an MoE model (model.moe)");
    if (t.recomputes(RecomputeModule::MoeAct) && !moe)
      fail("training.recompute_modules", "'moe_act' needs an MoE model (model.moe)");
    if (t.recomputes(RecomputeModule::SharedExperts) && !(moe && job.model.moe->shared_expert_ffn_hidden_size > 0))
      fail("training.recompute_modules", "'shared_experts' needs model.moe.shared_expert_ffn_hidden_size > 0");
    if (t.recomputes(RecomputeModule::MlaUpProj) && job.model.attention != AttentionType::Mla)
      fail("training.recompute_modules", "'mla_up_proj' needs multi-latent attention (model.attention: mla)");
  }
  if ((t.main_params_bytes != 4 || t.exp_avg_bytes != 4 || t.exp_avg_sq_bytes != 4) && !t.precision_aware_optimizer) {
    fail("training.precision_aware_optimizer", "must be true for main_params_dtype / exp_avg_dtype / exp_avg_sq_dtype "
                                               "other than fp32 (Megatron-LM: --use-precision-aware-optimizer)");
  }
  if (t.precision_aware_optimizer && !t.distributed_optimizer) {
    fail("training.precision_aware_optimizer", "needs distributed_optimizer: true or zero_stage >= 1 (Megatron-LM "
                                               "supports it with the distributed optimizer only)");
  }
  if (t.distribute_saved_activations &&
      (t.recompute != Recompute::Full || p.tensor < 2 || p.sequence_parallel)) {
    fail("training.distribute_saved_activations", "needs recompute: full, parallelism.tensor > 1 and no sequence "
                                                  "parallelism (Megatron-LM's rules: under SP the checkpoint is split already)");
  }
  if (t.precision_aware_optimizer && t.precision == Precision::Fp32) {
    fail("training.precision_aware_optimizer", "applies to fp16, bf16 and fp8 training (fp32 weights are the master copy)");
  }
  if (t.optimizer_offload && !t.distributed_optimizer) {
    fail("training.optimizer_offload", "needs distributed_optimizer: true or zero_stage >= 1 (Megatron-LM's CPU offload "
                                       "runs inside the distributed optimizer, DeepSpeed's ZeRO-Offload inside ZeRO)");
  }
  if (t.optimizer_offload && t.optimizer_offload_fraction == 0.0) {
    fail("training.optimizer_offload_fraction", "0 offloads nothing: set optimizer_offload: false instead");
  }
  if (!t.optimizer_offload && t.optimizer_offload_fraction != 1.0)
    fail("training.optimizer_offload_fraction", "applies to optimizer_offload: true only");
  if (!t.optimizer_offload && t.optimizer_offload_overlap)
    fail("training.optimizer_offload_overlap", "applies to optimizer_offload: true only");
  if (const int n = t.activation_offload_layers; n > 0) {
    // Megatron-LM's TransformerConfig rules for cpu_offloading, kept so that a job stepsim accepts is one Megatron runs.
    if (n >= job.model.num_layers) {
      fail("training.activation_offload_layers", "must be below model.num_layers (" + s(job.model.num_layers) +
                                                     "): the last layer's backward follows its forward at once");
    }
    if (p.pipeline > 1) {
      fail("training.activation_offload_layers", "needs parallelism.pipeline: 1 (Megatron-LM does not support pipeline "
                                                 "parallelism with CPU offloading)");
    }
    if (t.recompute != Recompute::None) {
      fail("training.activation_offload_layers", "needs training.recompute: none (Megatron-LM does not combine CPU "
                                                 "offloading with activation recomputation)");
    }
  }

  // --- simulation: models that later issues add are refused rather than silently replaced.
  if (job.simulation.overlap_model == OverlapModel::XGBoost && job.simulation.overlap_file.empty()) {
    fail("simulation.overlap_file", "is required with overlap_model xgboost: the model `stepsim slowdown train` wrote");
  }
}

}  // namespace stepsim::spec
