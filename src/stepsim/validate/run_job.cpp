// Published run -> job tree, FLOP conventions and measured step time. Every rule for a setting the source leaves
// unstated is here, and docs/VALIDATION-RULES.md states it; each use is reported as an assumption of the row.
#include "stepsim/validate/run_job.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/catalog/gpu_name.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/job/nvlink_domain.hpp"
#include "stepsim/validate/moe_notes.hpp"

namespace stepsim::validate {
namespace {

bool contains(const std::string& haystack, const char* needle) { return lower_case(haystack).find(needle) != std::string::npos; }

bool starts_with_any(const std::string& s, std::initializer_list<const char*> prefixes) {
  const std::string l = lower_case(s);
  for (const char* p : prefixes) {
    if (l.rfind(p, 0) == 0) return true;
  }
  return false;
}

// A row from NVIDIA's own benchmark pages (NeMo, Megatron-Bridge, DGX Cloud benchmarking), by its source.
// The Llama 3 paper's Table 4 (arXiv:2407.21783): its section 3.3.2 says what the rows leave out of the plan.
bool llama3_paper(const PublishedRun& r) { return starts_with_any(r.source, {"llama3_herd"}); }

bool nvidia_benchmark(const PublishedRun& r) {
  return starts_with_any(r.source, {"nemo", "megatronbridge", "megatron_bridge", "megatron-bridge", "dgxc"});
}

// DeepSeek-V2/V3 multi-latent attention (their config.json): q_lora, kv_lora, nope, rope, v head dims.
constexpr spec::MlaSpec kDeepSeekMla{1536, 512, 128, 64, 128};

// Architecture families by model name: what the CSV's columns do not say (gated MLP, norms, positions, MLA).
struct Family {
  bool gated = false, rmsnorm = false, rope = false, bias = true;
  bool tied = true;  // input and output embeddings shared (Megatron's default; GPT-3, BLOOM, MT-NLG)
  bool mla = false;
  int64_t shared_expert_ffn = 0;  // x moe_ffn_hidden
  int first_dense = 0;
  int moe_layer_freq = 1;  // after the first_dense layers, every moe_layer_freq-th layer is MoE
  int mtp = 0;  // multi-token prediction depths of the published architecture (DeepSeek-V3: 1)
  int router_groups = 0, router_group_topk = 0;  // group-limited routing (DeepSeek-V2: 8 / 3, V3: 8 / 4)
  int64_t head_dim = 0;  // attention head width when not hidden / heads (Qwen3: 128); 0 = hidden / heads
  bool dropout = true;   // residual dropout 0.1 (Megatron's default, GPT-3 era); modern families train without
  const char* name = "GPT";
};

// "llama4", "llama-4" or "llama 4" not followed by a digit (Llama-405B is Llama 3).
bool names_llama4(const std::string& lower_name) {
  for (const char* spelling : {"llama4", "llama-4", "llama 4"}) {
    const std::string w(spelling);
    for (size_t at = lower_name.find(w); at != std::string::npos; at = lower_name.find(w, at + 1)) {
      const size_t next = at + w.size();
      if (next >= lower_name.size() || std::isdigit(static_cast<unsigned char>(lower_name[next])) == 0) return true;
    }
  }
  return false;
}

Family family_of(const PublishedRun& r) {
  const std::string n = lower_case(r.model);
  Family f;
  auto llama_like = [&](const char* name) {
    f.gated = f.rmsnorm = f.rope = true;
    f.bias = false;
    f.tied = false;  // Llama, Mistral, Qwen, DeepSeek: --untie-embeddings-and-output-weights
    f.dropout = false;
    f.name = name;
  };
  if (n.find("deepseek-v3") != std::string::npos || n.find("deepseek-v2") != std::string::npos) {
    llama_like("DeepSeek (MLA, shared expert, dense first layers)");
    const bool v3 = n.find("deepseek-v3") != std::string::npos;
    f.mla = true;
    f.shared_expert_ffn = v3 ? 1 : 2;
    f.first_dense = v3 ? 3 : 1;
    f.mtp = v3 ? 1 : 0;
    f.router_groups = 8;  // config.json n_group, topk_group
    f.router_group_topk = v3 ? 4 : 3;
  } else if (names_llama4(n)) {
    // Llama 4 (NeMo's Llama4Experts16Config / Llama4Experts128Config, HF config.json): top-1 routing beside one
    // shared expert of the routed experts' width; Maverick alternates dense and MoE layers, the first dense
    // (moe_layer_freq [0, 1] x 24, HF interleave_moe_layer_step 2), Scout has MoE in every layer.
    llama_like("Llama 4 (SwiGLU, RMSNorm, RoPE, shared expert; Maverick: dense and MoE layers alternating)");
    f.shared_expert_ffn = 1;
    if (n.find("maverick") != std::string::npos) f.first_dense = 1, f.moe_layer_freq = 2;
  } else if (n.find("nemotron") != std::string::npos) {
    // Nemotron-3/4 (NeMo's Nemotron configs, arXiv:2402.16819): squared-ReLU MLP of two GEMMs (ffn 4h), LayerNorm,
    // RoPE, no biases, untied embeddings, no dropout. Squared ReLU costs what GeLU costs.
    f.rope = true;
    f.bias = false;
    f.tied = false;
    f.dropout = false;
    f.name = "Nemotron (squared-ReLU MLP, LayerNorm, RoPE, no biases, untied embeddings)";
  } else if (n.find("qwen3") != std::string::npos) {
    llama_like("Qwen3 (SwiGLU, RMSNorm, RoPE, no biases, untied embeddings, head dim 128)");
    f.head_dim = 128;  // every Qwen3 config.json: head_dim 128 whatever hidden / heads is (30B-A3B: 2048 / 32)
  } else if (n.find("megatron defaults") != std::string::npos) {
    // A Llama-shaped model launched without Llama's flags (FlagPerf's Megatron scripts pass no
    // --position-embedding-type rope, --disable-bias-linear, --untie-embeddings-and-output-weights or dropout 0):
    // Megatron's defaults hold, learned absolute positions, linear biases, tied embeddings and hidden dropout 0.1.
    f.gated = f.rmsnorm = true;
    f.name = "Llama dims under Megatron's defaults (SwiGLU, RMSNorm, learned positions, biases, tied embeddings, "
             "dropout 0.1)";
  } else if (n.find("llama") != std::string::npos || n.find("mistral") != std::string::npos ||
             n.find("mixtral") != std::string::npos || n.find("qwen") != std::string::npos ||
             n.find("deepseek") != std::string::npos || n.find("gemma") != std::string::npos) {
    llama_like("Llama (SwiGLU, RMSNorm, RoPE, no biases, untied embeddings)");
  } else if (n.rfind("mpt", 0) == 0) {
    // MosaicML's MPT (llm-foundry's MPTConfig: no_bias True in the published models, resid_pdrop and emb_pdrop 0.0
    // by default): GeLU FFN 4h, LayerNorm, no biases, tied embeddings, no dropout. The benchmark rows' notes say
    // learned absolute positions (their parameter counts grow with the sequence), which the GPT default gives.
    f.bias = false;
    f.dropout = false;
    f.name = "MPT (GeLU, LayerNorm, learned positions, no biases, tied embeddings, no dropout)";
  } else if (n.find("bloom") != std::string::npos) {
    f.rope = true;  // ALiBi: no position-embedding table, like RoPE for time and memory
    f.name = "BLOOM (GeLU, LayerNorm, ALiBi, biases, tied embeddings)";
  } else if (r.ffn_hidden != 4 * r.hidden && n.find("gpt") == std::string::npos && n.find("nlg") == std::string::npos) {
    llama_like("unknown name, FFN != 4h: Llama-like (SwiGLU, RMSNorm, RoPE, no biases, untied embeddings)");
  } else {
    f.name = "GPT (GeLU, LayerNorm, learned positions, biases, tied embeddings)";
  }
  return f;
}

// Per-token forward FLOPs of one layer's linear weights (x 2 for multiply-add), its MLP counted for MoE layers as
// the top-k routed experts plus shared experts.
double layer_linear_flops(const PublishedRun& r, const Family& f, bool moe_layer) {
  const double h = static_cast<double>(r.hidden);
  const double kv = r.kv_heads > 0 ? r.kv_heads : r.heads;
  const double hd = f.head_dim > 0 ? static_cast<double>(f.head_dim) : h / r.heads;
  double attn = 0;
  if (f.mla) {
    const spec::MlaSpec& a = kDeepSeekMla;
    const double q_lora = static_cast<double>(a.q_lora_rank), kv_lora = static_cast<double>(a.kv_lora_rank);
    const double nope = static_cast<double>(a.qk_nope_head_dim), rope = static_cast<double>(a.qk_rope_head_dim);
    const double v = static_cast<double>(a.v_head_dim), heads = r.heads;
    attn = h * q_lora + q_lora * heads * (nope + rope) + h * (kv_lora + rope) + kv_lora * heads * (nope + v) +
           heads * v * h;
  } else {
    attn = h * (r.heads * hd + 2 * kv * hd) + r.heads * hd * h;
  }
  const double mats = f.gated ? 3 : 2;
  double mlp = mats * h * static_cast<double>(r.ffn_hidden);
  if (moe_layer) {
    const double fe = static_cast<double>(r.moe_ffn_hidden > 0 ? r.moe_ffn_hidden : r.ffn_hidden);
    mlp = mats * h * fe * (r.moe_topk + f.shared_expert_ffn) + h * r.moe_experts;  // + router
  }
  return 2.0 * (attn + mlp);
}

double attention_width(const PublishedRun& r, const Family& f) {
  // Q·Kᵀ and ·V widths: heads x head dim (MLA: nope + rope = 192 for the scores, v = 128 for the values; mean 160).
  const spec::MlaSpec& a = kDeepSeekMla;
  if (f.mla) return r.heads * static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim) / 2;
  return f.head_dim > 0 ? static_cast<double>(r.heads * f.head_dim) : static_cast<double>(r.hidden);
}

// Micro-batches each pipeline runs per step (micro-batch 1 when not stated); 0 when the row's degrees leave no DP.
int64_t microbatches_per_pipeline(const PublishedRun& r) {
  const int64_t dp = static_cast<int64_t>(r.num_gpus) / (int64_t{r.tp} * r.pp * r.cp);
  return dp > 0 ? r.global_batch / (dp * r.micro_batch.value_or(1)) : 0;
}

}  // namespace

// The row's GPU as its source wrote it ("H100-SXM 96GB HBM2e, 500W (Meta Grand Teton)"): catalog/gpu_name.hpp.
hw::ResolvedGpu resolved_gpu(const hw::GpuCatalog& gpus, const PublishedRun& r) {
  try {
    return hw::resolve_gpu_name(gpus, r.gpu);
  } catch (const InputError& e) {
    // A row's GPU is its column, not a job key.
    std::string why = e.what();
    if (const std::string key = "key cluster.gpu: "; why.rfind(key, 0) == 0) why.erase(0, key.size());
    throw InputError("column gpu: " + why);
  }
}

const hw::GpuSpec& gpu_of(const hw::GpuCatalog& gpus, const PublishedRun& r) { return *resolved_gpu(gpus, r).gpu; }

std::string gpu_label(const hw::GpuCatalog& gpus, const PublishedRun& r) {
  const hw::ResolvedGpu g = resolved_gpu(gpus, r);
  if (!g.power_limit_W || *g.power_limit_W >= g.gpu->tdp_W) return g.gpu->name;
  return g.gpu->name + " at " + std::to_string(static_cast<int>(std::lround(*g.power_limit_W))) + " W";
}

bool is_2021_megatron(const PublishedRun& r) {
  return starts_with_any(r.source, {"narayanan2021", "mtnlg", "bloom"}) || starts_with_any(r.id, {"nar21", "mtnlg", "bloom"});
}

FlopConvention flop_convention(const PublishedRun& r) {
  if (r.flop_convention == "hardware") return FlopConvention::Hardware;
  if (r.flop_convention == "model") return FlopConvention::Model;
  return is_2021_megatron(r) ? FlopConvention::Hardware : FlopConvention::Model;
}

double step_flops(const PublishedRun& r, FlopConvention c) {
  const Family f = family_of(r);
  const double s = static_cast<double>(r.seq_len);
  double layers = 0;
  for (int l = 0; l < r.layers; ++l) {
    const bool moe = r.moe_experts > 0 && l >= f.first_dense && (l - f.first_dense) % f.moe_layer_freq == 0;
    layers += s * layer_linear_flops(r, f, moe) + 4.0 * s * s * attention_width(r, f);
  }
  const double logits = 2.0 * s * static_cast<double>(r.hidden) * static_cast<double>(r.vocab);
  const double per_seq = (c == FlopConvention::Hardware ? 4.0 : 3.0) * layers + 3.0 * logits;
  return per_seq * static_cast<double>(r.global_batch);
}

double mfu_peak_tflops(const hw::GpuCatalog& gpus, const PublishedRun& r) {
  const hw::GpuSpec& g = gpu_of(gpus, r);
  return g.peak_flops(r.precision == "fp32" ? spec::Precision::Fp32 : spec::Precision::Bf16) / 1e12;
}

namespace {

// The step time the row's measurement gives, unchecked.
double measured_step_time_raw(const hw::GpuCatalog& catalog_gpus, const PublishedRun& r, std::string* how) {
  auto say = [&](const std::string& s) {
    if (how) *how = s;
  };
  const double gpus = r.num_gpus;
  if (r.step_time_s) {
    say("step_time_s");
    return *r.step_time_s;
  }
  // Tokens per second is a time measured; TFLOP/s and MFU are that time over a FLOP count whose convention varies by
  // source (FlagPerf counts 6·N per token, Megatron-Bridge causal attention), so they are read only without it.
  if (r.tokens_per_s_per_gpu) {
    say("tokens_per_s_per_gpu");
    return static_cast<double>(r.global_batch) * static_cast<double>(r.seq_len) / (*r.tokens_per_s_per_gpu * gpus);
  }
  const FlopConvention c = flop_convention(r);
  const char* conv = c == FlopConvention::Hardware ? "hardware FLOPs (recompute counted)" : "model FLOPs";
  if (r.tflops_per_gpu) {
    say(std::string("tflops_per_gpu, ") + conv);
    return step_flops(r, c) / (*r.tflops_per_gpu * 1e12 * gpus);
  }
  say(std::string("mfu x ") + std::to_string(static_cast<int>(mfu_peak_tflops(catalog_gpus, r))) + " TFLOP/s, " + conv);
  return step_flops(r, c) / (*r.mfu * mfu_peak_tflops(catalog_gpus, r) * 1e12 * gpus);
}

// The PyTorch 2.x release a row's notes name ("torch 2.9.0.dev20250815"): its minor version, or -1.
int torch_minor_version(const std::string& notes) {
  const std::string l = lower_case(notes);
  const size_t at = l.find("torch 2.");
  if (at == std::string::npos) return -1;
  int minor = -1;
  const auto [end, error] = std::from_chars(l.data() + at + 8, l.data() + l.size(), minor);
  return error == std::errc() ? minor : -1;
}

// A torchtitan row's training section: the framework's profile, torch.compile when the notes name it, and FSDP2 as
// torchtitan runs it under pipeline parallelism. Keys only Megatron-Core has are dropped (the job would refuse them).
void torchtitan_training(const PublishedRun& r, YAML::Node& t, const std::function<void(const std::string&)>& assume) {
  t["framework"] = "torchtitan";
  // torchtitan refuses async TP without compile (parallelize_llama.py: "Async TP requires --training.compile"), and
  // its Float8 "is intended to be ran under torch.compile" (float8.py): an fp8 row is compiled unless it says eager.
  const bool async_tp = contains(r.notes, "asynctp") || contains(r.notes, "async tp");
  const bool fp8 = t["precision"].as<std::string>() == "fp8";
  const bool compiled = contains(r.notes, "compile") || async_tp || (fp8 && !contains(r.notes, "eager"));
  t["compile"] = compiled;
  assume(compiled ? "torchtitan: torch.compile per TransformerBlock (the notes name compile or async TP, or Float8)"
                  : "torchtitan: eager (the notes name neither torch.compile, async TP nor Float8)");
  // torchtitan compiles its loss with the model since 2025-04 (bbb1b616e); its Dec-2024 benchmark ran at 9dec370,
  // whose train.py leaves the loss eager ("compiling loss function causes CUDA errors, turning off for now").
  const bool dec_2024 = contains(r.notes, "torchtitan 9dec370");
  if (compiled && dec_2024) {
    t["compile_loss"] = false;
    assume("torchtitan 9dec370 (Dec 2024): the loss stays eager (compiled with the model from 2025-04 on)");
  }
  // PyTorch's SDPA runs its own FlashAttention-2 before 2.11, where it comes to prefer cuDNN on sm90 and sm100.
  const int torch_minor = torch_minor_version(r.notes);
  if (dec_2024 || (torch_minor >= 0 && torch_minor < 11)) {
    t["sdpa_backend"] = "flash";
    assume(std::string("PyTorch ") + (dec_2024 ? "of Dec 2024" : "2." + std::to_string(torch_minor)) +
           ": scaled_dot_product_attention runs its own FlashAttention-2 (cuDNN preferred from 2.11)");
  }
  // Before 2025-07-28 (PR 1094) torchtitan left the embedding, final norm and output layer to the root module.
  if (dec_2024) {
    t["fsdp_units"] = "root";
    assume("torchtitan 9dec370 (Dec 2024): FSDP2's root module holds the embedding, final norm and output layer");
  }
  for (const char* k : {"attention_backend", "cross_entropy_fusion", "overlap_grad_reduce", "overlap_param_gather",
                        "tp_comm_overlap", "recompute_modules"}) {
    t.remove(k);
  }
  if (async_tp) {
    assume("torchtitan async TP (SymmetricMemory micro-pipelining) not modelled: TP collectives costed unoverlapped");
  }
  // torch.distributed.pipelining (stage.py, backward_maybe_with_nosync) turns off FSDP2's resharding and gradient sync
  // for all but the last micro-batch's backward, and torchtitan sets reshard_after_forward=False under PP: the
  // parameters are gathered once per step and the gradients reduce-scattered once, ZeRO-1's communication.
  if (r.pp > 1 && t["zero_stage"] && t["zero_stage"].as<int>() == 3) {
    t.remove("zero_stage");
    t["distributed_optimizer"] = true;
    assume("torchtitan under PP: FSDP2 gathers parameters once per step and reduce-scatters gradients on the last "
           "micro-batch (costed as ZeRO-1)");
  }
}

// A DeepSpeed ZeRO-3 row of a Hugging Face model: the DeepSpeed profile, with the reduce bucket its notes quote from
// the run's ds_config ("reduce bucket 1e7"), else DeepSpeed's default. Keys only Megatron-Core has are dropped.
void deepspeed_training(const PublishedRun& r, YAML::Node& t, const std::function<void(const std::string&)>& assume) {
  t["framework"] = "deepspeed";
  for (const char* k : {"attention_backend", "cross_entropy_fusion", "overlap_grad_reduce", "overlap_param_gather",
                        "tp_comm_overlap", "recompute_modules", "distributed_optimizer"}) {
    t.remove(k);
  }
  const std::string notes = lower_case(r.notes);
  const size_t at = notes.find("reduce bucket ");
  if (at != std::string::npos) {
    const double v = std::strtod(notes.c_str() + at + 14, nullptr);
    if (v >= 1 && v <= 1e12) {
      t["reduce_bucket_size"] = static_cast<int64_t>(v);
      assume("DeepSpeed ZeRO-3: reduce_bucket_size " + std::to_string(static_cast<int64_t>(v)) + " (the notes)");
      return;
    }
  }
  assume("DeepSpeed ZeRO-3: reduce_bucket_size not stated: DeepSpeed's default, 500000000");
}

}  // namespace

double measured_step_time_s(const hw::GpuCatalog& catalog_gpus, const PublishedRun& r, std::string* how) {
  const double t = measured_step_time_raw(catalog_gpus, r, how);
  if (!std::isfinite(t) || !(t > 0)) {
    throw InputError("line " + std::to_string(r.line) + ": row " + r.id + ": the measurement gives no finite positive "
                     "step time (" + std::to_string(t) + " s)");
  }
  return t;
}


namespace {

// The NeMo container a row's notes name ("nvcr.io/nvidia/nemo:25.04.01") as year x 100 + month, or 0.
int nemo_container(const std::string& notes) {
  const std::string l = lower_case(notes);
  const size_t at = l.find("nemo:");
  if (at == std::string::npos) return 0;
  int year = 0, month = 0;
  size_t p = at + 5;
  while (p < l.size() && std::isdigit(static_cast<unsigned char>(l[p])) != 0 && year < 100) {
    year = year * 10 + (l[p++] - '0');
  }
  if (p >= l.size() || l[p] != '.' || year == 0 || year >= 100) return 0;
  ++p;
  while (p < l.size() && std::isdigit(static_cast<unsigned char>(l[p])) != 0 && month < 100) {
    month = month * 10 + (l[p++] - '0');
  }
  return month >= 1 && month <= 12 ? year * 100 + month : 0;
}

// Transformer Engine before 2.5 has no fused attention for MLA on Blackwell: cuDNN's fused kernels are off on sm100
// for head dims above 128 (common/fused_attn/fused_attn.cpp, v2.2 to v2.4; 2.5 adds Q·K 192 / V 128 for training)
// and FlashAttention is off when the Q·K and V head dims differ (pytorch/dot_product_attention/utils.py: "does not
// support MLA"), so DotProductAttention falls back to its unfused path. NeMo's containers up to 25.04 predate 2.5.
bool unfused_mla_on_blackwell(const PublishedRun& r, const Family& f, const hw::GpuSpec& gpu) {
  if (!f.mla || gpu.arch != hw::GpuArch::Blackwell || r.cp > 1) return false;  // TE runs CP on fused kernels only
  const int container = nemo_container(r.notes);
  return container > 0 && container <= 2504;
}

}  // namespace

RunJob job_for_run(const hw::GpuCatalog& gpus, const PublishedRun& r) {
  RunJob out;
  auto assume = [&](const std::string& s) { out.assumptions.push_back(s); };
  const bool old = is_2021_megatron(r);
  const Family f = family_of(r);
  const hw::ResolvedGpu resolved = resolved_gpu(gpus, r);
  const hw::GpuSpec& gpu = *resolved.gpu;
  for (const std::string& n : resolved.notes) assume(n);
  YAML::Node root(YAML::NodeType::Map);

  YAML::Node m(YAML::NodeType::Map);
  m["name"] = r.model.empty() ? r.id : r.model;
  m["num_layers"] = r.layers;
  m["hidden_size"] = r.hidden;
  m["num_attention_heads"] = r.heads;
  if (r.kv_heads > 0 && r.kv_heads != r.heads) {
    m["num_query_groups"] = r.kv_heads;
    m["attention"]["type"] = "gqa";
  }
  if (f.head_dim > 0) m["kv_channels"] = f.head_dim;
  m["ffn_hidden_size"] = r.ffn_hidden;
  m["activation"] = f.gated ? "swiglu" : "gelu";
  m["hidden_dropout"] = f.dropout ? 0.1 : 0.0;
  m["attention_dropout"] = f.dropout ? 0.1 : 0.0;
  m["normalization"] = f.rmsnorm ? "rmsnorm" : "layernorm";
  m["add_bias_linear"] = f.bias;
  m["tie_embeddings"] = f.tied;
  m["position_embedding"] = f.rope ? "rope" : "learned";
  m["vocab_size"] = r.vocab;
  m["seq_length"] = r.seq_len;
  assume(std::string("architecture from the model name: ") + f.name);
  if (f.mla) {
    YAML::Node a(YAML::NodeType::Map);
    a["type"] = "mla";
    a["q_lora_rank"] = kDeepSeekMla.q_lora_rank;
    a["kv_lora_rank"] = kDeepSeekMla.kv_lora_rank;
    a["qk_nope_head_dim"] = kDeepSeekMla.qk_nope_head_dim;
    a["qk_rope_head_dim"] = kDeepSeekMla.qk_rope_head_dim;
    a["v_head_dim"] = kDeepSeekMla.v_head_dim;
    m["attention"] = a;
  }
  if (r.moe_experts > 0) {
    YAML::Node e(YAML::NodeType::Map);
    e["num_experts"] = r.moe_experts;
    e["topk"] = r.moe_topk;
    const int64_t fe = r.moe_ffn_hidden > 0 ? r.moe_ffn_hidden : r.ffn_hidden;
    e["ffn_hidden_size"] = fe;
    if (f.shared_expert_ffn > 0) e["shared_expert_ffn_hidden_size"] = f.shared_expert_ffn * fe;
    if (f.first_dense > 0) e["first_k_dense"] = f.first_dense;
    if (f.moe_layer_freq > 1) e["layer_freq"] = f.moe_layer_freq;
    if (const auto drop = stated_token_drop(r.notes)) {
      e["capacity_factor"] = drop->capacity_factor;
      e["pad_to_capacity"] = drop->pad_to_capacity;
      std::ostringstream a;
      a << "token-drop routing, capacity factor " << drop->capacity_factor
        << (drop->pad_to_capacity ? ", padded to capacity" : ", not padded") << " (the notes; NeMo's callback)";
      assume(a.str());
    }
    if (f.router_groups > 0) {
      e["router_num_groups"] = f.router_groups;
      e["router_group_topk"] = f.router_group_topk;
    }
    if (!r.token_dispatcher.empty()) e["token_dispatcher"] = r.token_dispatcher;
    m["moe"] = e;
  }
  if (f.mtp > 0) {
    m["mtp_layers"] = f.mtp;
    assume("multi-token prediction: " + std::to_string(f.mtp) + " depth (the published architecture; on the last stage)");
  }
  root["model"] = m;

  YAML::Node p(YAML::NodeType::Map);
  p["tensor"] = r.tp;
  p["pipeline"] = r.pp;
  p["context"] = r.cp;
  if (r.ep > 1) p["expert"] = r.ep;
  // Megatron-Core MoE recipes fold EP into tensor x data ranks with expert tensor parallel size 1 when EP does not
  // fit in data x context (DeepSeek-V3: TP 2, EP 64, DP 32, ETP 1).
  const std::optional<int> etp = r.moe_experts > 0 ? stated_expert_tensor(r.notes) : std::nullopt;
  if (etp) {
    p["expert_tensor"] = *etp;
    assume("expert_tensor " + std::to_string(*etp) + " (the notes)");
  } else if (r.ep > 1 && r.moe_experts > 0 && r.tp > 1) {
    const int64_t dc = static_cast<int64_t>(r.num_gpus) / (int64_t{r.tp} * r.pp * r.cp) * r.cp;
    if (dc % r.ep != 0) {
      p["expert_tensor"] = 1;
      assume("expert_tensor 1 (EP " + std::to_string(r.ep) + " > data x context: parallel folding)");
    }
  }
  if (r.cp > 1 && llama3_paper(r)) {
    // The Llama 3 paper (section 3.3.2, "Context parallelism for long sequences"): "we use an all-gather based method
    // where we first all-gather the key (K) and value (V) tensors, and then compute attention output for the local
    // query (Q) tensor chunk", its latency exposed.
    p["cp_comm_type"] = "all_gather";
    assume("context parallelism all-gathers K and V before attention (Llama 3 paper, section 3.3.2)");
  }
  const bool sp = r.sequence_parallel.value_or(!old && r.tp > 1);
  p["sequence_parallel"] = sp;
  if (!r.sequence_parallel && r.tp > 1) {
    assume(sp ? "sequence parallelism on (Megatron-Core era, TP > 1)" : "no sequence parallelism (Megatron-LM 2021-22)");
  }
  if (r.vp && *r.vp > 1) {
    p["virtual_stages"] = *r.vp;
    p["schedule"] = "interleaved-1f1b";
  } else if (!r.vp && r.pp > 1 && contains(r.notes, "interleav") && r.framework == "torchtitan") {
    // torchtitan's generate_split_points (pipelining_utils.py): two stages per rank for a multi-stage schedule.
    p["virtual_stages"] = 2;
    p["schedule"] = "interleaved-1f1b";
    assume("vp not stated, torchtitan interleaved: 2 stages per rank (its generate_split_points)");
  } else if (!r.vp && r.pp > 1 && llama3_paper(r) && (r.layers + 2) % r.pp == 0 &&
             microbatches_per_pipeline(r) % r.pp == 0) {
    // The Llama 3 paper (arXiv:2407.21783, section 3.3.2) balances its interleaved pipeline by taking one layer off the
    // first and the last stage, so that "the first model chunk on the first stage has only the embedding, and the
    // last model chunk on the last stage has only output projection and loss calculation": one layer per model chunk.
    const int v = (r.layers + 2) / r.pp;
    p["virtual_stages"] = v;
    p["schedule"] = "interleaved-1f1b";
    assume("vp not stated: " + std::to_string(v) + " chunks per stage, one layer each (Llama 3 paper, section 3.3.2: "
           "the first chunk holds only the embedding, the last only the output layer and loss)");
  } else if (!r.vp && r.pp > 1 && contains(r.notes, "interleav") && !old) {
    // The source says it interleaved but not how deeply: the deepest of 4 and 2 chunks per stage that keeps two
    // layers a chunk on average (embedding and loss counted) and fits the micro-batches (a multiple of pipeline).
    const int64_t m = microbatches_per_pipeline(r);
    int v = 1;
    for (int c : {4, 2}) {
      if (v == 1 && (r.layers + 2) >= 2 * r.pp * c && m % r.pp == 0) v = c;
    }
    if (v > 1) {
      p["virtual_stages"] = v;
      p["schedule"] = "interleaved-1f1b";
    }
    assume("vp not stated, the source says interleaved: " + std::to_string(v) + " chunks per stage");
  } else if (!r.vp && r.pp > 1 && starts_with_any(r.source, {"narayanan2021_table1"})) {
    // Narayanan 2021 section 5.1: "we use the interleaved pipeline schedule with the scatter/gather optimization
    // enabled" for Table 1, without the chunk count: the fewest chunks (> 1) that divide a stage's layers, as
    // Megatron-LM 2021 requires, when the micro-batches are a multiple of pipeline (its other requirement). Its p2p
    // was synchronous then (asynchronous overlap came with Megatron-LM 3.0, 2022).
    const int64_t m = microbatches_per_pipeline(r);
    const int per_stage = r.layers % r.pp == 0 ? r.layers / r.pp : 0;
    int v = 1;
    for (int c = 2; v == 1 && c <= per_stage; ++c) {
      if (per_stage % c == 0 && m % r.pp == 0) v = c;
    }
    if (v > 1) {
      p["virtual_stages"] = v;
      p["schedule"] = "interleaved-1f1b";
      p["overlap_p2p_comm"] = false;
    }
    assume("vp not stated, the paper (section 5.1) interleaved: " + std::to_string(v) +
           " chunks per stage (the fewest that divide its layers), synchronous p2p");
  } else if (!r.vp && r.pp > 1) {
    assume("vp not stated: plain 1F1B (no interleaving)");
  }
  if (!r.pipeline_layout.empty()) {
    // The recipe's own layout: its chunks set the interleaving (job_loader.cpp), replacing the rules above.
    p["pipeline_layout"] = r.pipeline_layout;
    p.remove("virtual_stages");
    p.remove("schedule");
  }
  root["parallelism"] = p;

  YAML::Node t(YAML::NodeType::Map);
  t["micro_batch_size"] = r.micro_batch.value_or(1);
  if (!r.micro_batch) assume("micro_batch not stated: 1");
  t["global_batch_size"] = r.global_batch;
  std::string prec = r.precision.empty() ? "bf16" : r.precision;
  // Blackwell's block-scaled formats (issue 44) as Transformer Engine runs them: MXFP8 is fp8 with the mxfp8 recipe,
  // NVFP4 its own precision (docs/MODEL.md, "Quantized GEMMs"). torchao's MXFP8 (torchtitan) is not TE's recipe: its
  // rows keep torchtitan's one fp8 recipe, tensorwise current scaling.
  if (prec == "nvfp4") {
    assume("nvfp4: Transformer Engine's NVFP4 recipe on every layer; the recipe's fp4 parameter gather is costed in "
           "bf16");
  }
  if (prec == "mxfp8") {
    prec = "fp8";
    if (r.framework == "torchtitan") {
      t["fp8_recipe"] = "current";
      assume("mxfp8 (torchao) costed as fp8 with per-tensor current scaling, torchtitan's one fp8 recipe");
    } else {
      t["fp8_recipe"] = "mxfp8";
    }
  }
  if (prec == "16bit") {
    prec = old ? "fp16" : "bf16";
    assume("16bit: " + prec);
  } else if (r.precision.empty()) {
    assume("precision not stated: bf16");
  }
  t["precision"] = prec;
  if (!r.recompute_modules.empty()) {
    // The recipe's own selective recompute (blank recompute column = selective, the only one modules apply to).
    t["recompute"] = "selective";
    for (const std::string& m : r.recompute_modules) t["recompute_modules"].push_back(m);
  } else if (!r.recompute.empty()) {
    t["recompute"] = r.recompute;
  } else if (old) {
    t["recompute"] = "full";  // Megatron-LM 2021-22 checkpointed every layer (Narayanan 2021 §3.5, MT-NLG, BLOOM)
    assume("recompute not stated: full (Megatron-LM 2021-22)");
  } else if (llama3_paper(r) && r.seq_len / std::max(1, r.cp) <= 8192) {
    // The Llama 3 paper (arXiv:2407.21783, section 3.3.2): "we could pre-train Llama 3 on sequences of 8K tokens
    // without activation checkpointing" (its pipeline frees stage inputs and outputs early and tunes the number of
    // micro-batches in flight; with the sharding and the schedule read from the same section they fit).
    // The 128K-context row splits each sequence over CP 16: every rank holds 8K tokens' activations, as in the 8K rows,
    // so the same holds there.
    t["recompute"] = "none";
    assume("recompute not stated: none (Llama 3 paper, section 3.3.2: 8K-token pre-training without activation "
           "checkpointing; 8K tokens per context-parallel rank)");
  }
  // (a modern run's unstated recompute is decided by validation.cpp: the least recompute that fits in memory)
  const bool te_unfused_mla = unfused_mla_on_blackwell(r, f, gpu);
  const std::string backend =
      !r.attention_backend.empty() ? r.attention_backend : old || te_unfused_mla ? "unfused" : "flash";
  t["attention_backend"] = backend;
  if (r.attention_backend.empty()) {
    assume(old              ? "attention unfused (Megatron-LM before FlashAttention)"
           : te_unfused_mla ? "attention unfused: MLA on Blackwell in a NeMo container before Transformer Engine 2.5 "
                              "(no fused kernel for Q·K head dim 192 on sm100)"
                            : "attention: flash (fused kernels)");
  }
  const std::string dopt = lower_case(r.dist_optimizer);
  bool dist = !old;
  if (dopt.find("zero-3") != std::string::npos || dopt.find("zero3") != std::string::npos ||
      dopt.find("zero stage 3") != std::string::npos) {
    t["zero_stage"] = 3;
    dist = false;
    if (old) {
      // DeepSpeed before 0.4.3 (June 2021, PR #1188) gathered ZeRO-3 parameters one tensor at a time, each
      // all-gather followed by torch.cuda.synchronize(), so its "prefetch" overlapped nothing.
      t["zero3_param_fetch"] = "blocking";
      assume("ZeRO-3 of 2021 (DeepSpeed < 0.4.3): parameters gathered per tensor, host-blocking");
    }
  } else if (contains(dopt, "fsdp-style") && llama3_paper(r)) {
    // The Llama 3 paper (section 3.3.2): "Our use of FSDP for Llama 3 shards the optimizer states and gradients, but
    // for model shards we do not reshard after forward computation": parameters whole, gradients and optimizer
    // states sharded, as ZeRO-2.
    t["zero_stage"] = 2;
    dist = false;
    assume("FSDP as the Llama 3 paper describes it (section 3.3.2): gradients and optimizer states sharded, parameters "
           "not resharded (ZeRO-2)");
  } else if (dopt.rfind("none", 0) == 0 || dopt == "no" || dopt == "false") {
    dist = false;
  } else if (!dopt.empty()) {
    dist = true;  // yes, ZeRO-1/2, FSDP-style sharding of optimizer states and gradients
  } else {
    assume(std::string("dist_optimizer not stated: ") + (dist ? "distributed optimizer" : "none"));
  }
  if (r.zero_stage) {  // the row's own column says how data parallelism shards
    if (*r.zero_stage >= 2) {
      t["zero_stage"] = *r.zero_stage;
      dist = false;
    } else {
      t.remove("zero_stage");
      dist = *r.zero_stage == 1;
    }
  }
  if (!t["zero_stage"]) t["distributed_optimizer"] = dist;
  if (r.framework_inferred) assume("framework " + r.framework + " (dist_optimizer names DeepSpeed)");
  const bool deepspeed_profile = deepspeed_plan(r) && f.gated && f.rmsnorm && f.rope && !f.bias && !f.mla;
  if (framework_costed_as_megatron(r.framework) && !deepspeed_profile) {
    assume("framework " + r.framework + ": its kernels, sharding schedule and overlaps are costed as Megatron-Core's "
           "(the framework profiles are issue 43 item 2)");
  }
  // DeepSpeed's pipeline engine with ZeRO-1 all-reduces the gradients (runtime/pipe/engine.py _exec_reduce_grads:
  // buffered_allreduce_fallback; the BF16_Optimizer's fp32 ones for bf16) and all-gathers the updated partitions.
  if (dist && r.pp > 1 && contains(dopt, "deepspeed") && !t["zero_stage"]) {
    t["zero1_grad_reduce"] = "all_reduce";
    assume("ZeRO-1 in DeepSpeed's pipeline engine: gradients all-reduced, updated partitions all-gathered");
  }
  // NeMo 1.x (the NeMo Framework Launcher's recipes, the 24.0x containers) trains with Apex's distributed_fused_adam
  // and optim.grad_sync_dtype=bf16 in every published performance example (NeMo-Megatron-Launcher
  // examples/training/{gpt,llama}/h100/*.sh): gradients accumulated and reduce-scattered in bf16.
  // NeMo 2.x and Megatron-Bridge benchmark scripts (scripts/performance/helpers.py set_precision_configs;
  // perf_recipes/_common.py _perf_precision) and the DGX Cloud benchmarking recipes built on them set
  // grad_reduce_in_fp32 = False: NVIDIA's published benchmarks all reduce gradients in bf16.
  if (nvidia_benchmark(r) && !r.precision.empty() && r.precision != "fp32") {
    t["grad_reduce_in_fp32"] = false;
    assume("NVIDIA benchmark (NeMo, Megatron-Bridge, DGX Cloud recipes): gradients reduced in bf16");
  }
  // Megatron-Bridge's benchmark recipes (25.09: scripts/performance/configs/*/*_llm_pretrain.yaml; 25.11:
  // scripts/performance/utils/helpers.py; 26.04: utils/overrides.py) set cross_entropy_fusion_impl = "te" over the
  // providers' cross_entropy_loss_fusion = True: Transformer Engine's fused cross-entropy.
  // Other rows whose notes name it (NeMo's perf scripts set cross_entropy_fusion_impl "te" for DeepSeek-V3 and Llama 4)
  // run it too.
  if (starts_with_any(r.source, {"megatronbridge", "megatron_bridge", "megatron-bridge"})) {
    t["cross_entropy_fusion"] = "te";
    assume("Megatron-Bridge benchmark recipe: Transformer Engine's fused cross-entropy");
  } else if (contains(r.notes, "te cross-entropy fusion")) {
    t["cross_entropy_fusion"] = "te";
    assume("Transformer Engine's fused cross-entropy (the notes)");
  }
  // Optimizer states in 16 bits (Apex's DistributedFusedAdam with `optim.dtype: bf16`, as NeMo's Nemotron-4 340B
  // recipe sets it): master weights and both moments in that dtype, 16-bit gradients read as they are — what the
  // precision-aware optimizer's dtypes express (the job's rules then ask for the distributed optimizer).
  if (!r.optimizer_state_dtype.empty() && r.optimizer_state_dtype != "fp32") {
    t["precision_aware_optimizer"] = true;
    t["main_params_dtype"] = r.optimizer_state_dtype;
    t["exp_avg_dtype"] = r.optimizer_state_dtype;
    t["exp_avg_sq_dtype"] = r.optimizer_state_dtype;
  }
  if (!old) {
    // A row whose notes quote its Megatron command line (they name --use-mcore-models or --use-distributed-optimizer)
    // overlaps what that line asks for: --overlap-grad-reduce and --overlap-param-gather are off by default in
    // Megatron-LM (FlagPerf's pretrain_llama3.sh passes neither).
    const bool quoted = contains(r.notes, "--use-mcore-models") || contains(r.notes, "--use-distributed-optimizer");
    const bool grad = !quoted || contains(r.notes, "--overlap-grad-reduce");
    const bool param = !quoted || contains(r.notes, "--overlap-param-gather");
    t["overlap_grad_reduce"] = grad;
    if (dist) t["overlap_param_gather"] = param;
    if (quoted && !(grad && (param || !dist))) {
      assume(std::string("the notes quote the command line without ") +
             (grad ? "--overlap-param-gather" : param || !dist ? "--overlap-grad-reduce"
                                                              : "--overlap-grad-reduce or --overlap-param-gather") +
             ": not overlapped (Megatron-LM's default)");
    }
  }
  const bool notes_overlap = contains(r.notes, "tp-comm-overlap") && !contains(r.notes, "no-tp-comm-overlap");
  if (r.tp_comm_overlap.value_or(notes_overlap) && r.tp > 1) t["tp_comm_overlap"] = true;
  if (r.overlap_moe_expert_parallel_comm.value_or(false)) t["overlap_moe_expert_parallel_comm"] = true;
  if (r.delay_wgrad_compute.value_or(false)) t["delay_wgrad_compute"] = true;
  if (r.framework == "torchtitan") torchtitan_training(r, t, assume);
  if (deepspeed_profile) deepspeed_training(r, t, assume);
  root["training"] = t;

  YAML::Node c(YAML::NodeType::Map);
  c["gpu"] = gpu.name;
  if (resolved.power_limit_W) c["power_limit_W"] = *resolved.power_limit_W;
  c["num_gpus"] = r.num_gpus;
  const int gpn = std::min(r.gpus_per_node.value_or(8), r.num_gpus);
  if (!r.gpus_per_node) assume("gpus_per_node not stated: 8");
  if (r.num_gpus % gpn != 0 && gpn > 8) {
    // An NVLink domain larger than a host (a GB200/GB300 NVL72 rack of 4-GPU trays) holding part of the job: the
    // loader spreads it over the fewest domains, the same whole trays in each (job/nvlink_domain.hpp: 128, 256 and 512
    // GPUs take 64 of each rack's 72).
    c["gpus_per_node"] = 4;
    c["nvlink_domain"] = gpn;
    assume("NVLink domain of " + std::to_string(gpn) + " GPUs holding " + std::to_string(r.num_gpus) + ": " +
           std::to_string(spec::gpus_per_domain(r.num_gpus, gpn)) +
           " GPUs per domain (whole 4-GPU trays, the same in each)");
  } else {
    c["gpus_per_node"] = gpn;
  }
  const bool hopper_or_later = gpu.arch >= hw::GpuArch::Hopper;
  const double intra = r.intra_node_bw_GBps.value_or(gpu.intra_node_GBps);  // the GPU's NVLink (data/gpus.yaml)
  const double inter = r.inter_node_bw_Gbps_per_gpu.value_or(hopper_or_later ? 400 : 200);
  if (!r.intra_node_bw_GBps) assume("intra_node_bw not stated: " + std::to_string(static_cast<int>(intra)) + " GB/s (NVLink of the GPU)");
  if (!r.inter_node_bw_Gbps_per_gpu) assume("inter_node_bw not stated: " + std::to_string(static_cast<int>(inter)) + " Gb/s per GPU");
  c["intra_node"]["bandwidth_GBps"] = intra;
  c["inter_node"]["bandwidth_Gbps"] = inter;
  root["cluster"] = c;
  out.root = root;
  // The optional recipe columns the row gave, for `validate --verbose` (what the published tables left out and the
  // row states from the recipe: bench/validation/README.md cites each).
  auto state = [&](const char* column, const std::string& value) { out.stated.push_back(std::string(column) + ": " + value); };
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  if (r.sequence_parallel) state("sequence_parallel", flag(*r.sequence_parallel));
  if (r.tp_comm_overlap) state("tp_comm_overlap", flag(*r.tp_comm_overlap));
  if (r.overlap_moe_expert_parallel_comm) state("overlap_moe_expert_parallel_comm", flag(*r.overlap_moe_expert_parallel_comm));
  if (r.delay_wgrad_compute) state("delay_wgrad_compute", flag(*r.delay_wgrad_compute));
  if (!r.token_dispatcher.empty()) state("token_dispatcher", r.token_dispatcher);
  if (!r.attention_backend.empty()) state("attention_backend", r.attention_backend);
  if (!r.pipeline_layout.empty()) state("pipeline_layout", r.pipeline_layout);
  if (!r.recompute_modules.empty()) {
    std::string list;
    for (const std::string& m : r.recompute_modules) list += (list.empty() ? "" : " ") + m;
    state("recompute_modules", list);
  }
  if (!r.optimizer_state_dtype.empty()) state("optimizer_state_dtype", r.optimizer_state_dtype);
  if (r.zero_stage) state("zero_stage", std::to_string(*r.zero_stage));
  if (!r.framework.empty() && !r.framework_inferred) state("framework", r.framework);
  return out;
}

}  // namespace stepsim::validate
