#include "stepsim/input/job_loader.hpp"
#include "stepsim/input/foreign_spellings.hpp"

#include "stepsim/input/torchtitan_toml.hpp"
#include "stepsim/job/cluster_rates.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/catalog/gpu_name.hpp"
#include "stepsim/catalog/nccl_tuner_table.hpp"
#include "stepsim/input/hf_config.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"
#include "stepsim/input/megatron_args.hpp"
#include "stepsim/job/nvlink_domain.hpp"
#include "stepsim/job/pipeline_split.hpp"
#include "stepsim/io/yaml_reader.hpp"

namespace stepsim::spec {

// Key under which an included cluster file's path travels with its keys (not a user key: a leading underscore).
constexpr const char* kClusterFileKey = "_file";


namespace fs = std::filesystem;

namespace {

// Whether YAML reads `value` as the plain scalar it is, letter for letter: letters, digits and `_ . / +`, with `-`
// anywhere but first (a leading one may start a list), not `...` first (a document's end) and none of YAML's
// spellings of null. Most values written with --set are such a number, name or path; building their node directly
// skips a parser per override.
bool is_literal_scalar(const std::string& value) {
  if (value.empty() || value.front() == '-' || value.rfind("...", 0) == 0) return false;
  if (value == "null" || value == "Null" || value == "NULL") return false;
  for (const unsigned char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '/' || c == '+' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// An override's value as YAML reads it (a number, a name, a list or a mapping); text that is not YAML stays the
// string it is.
YAML::Node override_value(const std::string& value) {
  if (is_literal_scalar(value)) {
    YAML::Node v(value);
    v.SetTag("?");  // as the parser tags a plain scalar
    return v;
  }
  try {
    return YAML::Load(value);
  } catch (const YAML::Exception&) {
    return YAML::Node(value);
  }
}

}  // namespace

void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides) {
  for (const auto& ov : overrides) {
    const auto eq = ov.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError("--set " + ov + ": expected key=value, e.g. model.num_layers=80");
    }
    const std::string key = ov.substr(0, eq);
    const std::string value = ov.substr(eq + 1);
    std::vector<std::string> parts;
    std::stringstream ks(key);
    for (std::string part; std::getline(ks, part, '.');) {
      if (part.empty()) throw InputError("--set " + ov + ": empty key segment in '" + key + "'");
      parts.push_back(part);
    }
    YAML::Node v = override_value(value);
    spec::check_yaml_tree(v, value.size(), "--set " + key);
    if (!root || !root.IsMap()) root = YAML::Node(YAML::NodeType::Map);
    YAML::Node cur = root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = cur[parts[i]];
      if (!next.IsDefined() || next.IsNull()) {
        cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
        next = cur[parts[i]];
      } else if (!next.IsMap()) {
        throw InputError("--set " + ov + ": key " + parts[i] + " is not a mapping");
      }
      cur.reset(next);  // rebind, not assign (yaml-cpp assignment copies contents)
    }
    cur[parts.back()] = v;
  }
  // One rule for paths: relative to where they are written. A job file's own were resolved against its folder
  // before the overrides (resolving those again against "." changes nothing); a path given here on the command line
  // (simulation.overlap_file, calibration_store, model.hf_config, cluster) is relative to the working directory, and
  // a cluster or HF config given this way is read like one written in the job.
  if (!overrides.empty()) resolve_includes(root, ".");
}

YAML::Node model_from_hf_config(const std::string& json_text, const std::string& source, const YAML::Node& model) {
  YAML::Node merged = hf_config_to_model_node(json_text, source);
  // Keys written next to hf_config (e.g. seq_length) override what the config says.
  if (model.IsMap()) {
    for (auto it = model.begin(); it != model.end(); ++it) {
      const std::string k = it->first.Scalar();
      if (k == "hf_config") continue;
      merged[k] = it->second;
      if (merged[kHfAssumedKey].IsMap()) merged[kHfAssumedKey].remove(k);  // the job says it: nothing assumed
    }
  }
  return merged;
}

void resolve_includes(YAML::Node& root, const std::string& base_dir) {
  if (!root || !root.IsMap()) return;
  // Like every path inside a job, the calibration store and the overlap file are relative to the job file.
  if (YAML::Node sim = root["simulation"]; sim.IsMap()) {
    for (const char* key : {"calibration_store", "overlap_file"}) {
      if (!sim[key].IsScalar()) continue;
      const std::string path = sim[key].Scalar();
      if (!path.empty() && path != "none" && fs::path(path).is_relative()) {
        sim[key] = (fs::path(base_dir) / path).lexically_normal().string();
      }
    }
  }
  YAML::Node model = root["model"];
  if (model.IsMap() && model["hf_config"].IsDefined()) {
    const YAML::Node hf = model["hf_config"];
    if (!hf.IsScalar()) throw InputError("key model.hf_config: must be a path to a config.json");
    const std::string path = (fs::path(base_dir) / hf.Scalar()).lexically_normal().string();
    root["model"] = model_from_hf_config(read_text_file(path, "Hugging Face config"), path, model);
  }
  YAML::Node cluster = root["cluster"];
  if (cluster.IsScalar()) {
    const std::string path = (fs::path(base_dir) / cluster.Scalar()).lexically_normal().string();
    YAML::Node c = parse_yaml(read_text_file(path, "cluster file"), path);
    if (c.IsMap() && c.size() == 1 && c["cluster"].IsMap()) c = c["cluster"];
    if (!c.IsMap()) throw InputError(path + ": cluster file must be a mapping of cluster keys");
    // Remembered so that a bad key in it is reported against this file, not the job that includes it.
    c[kClusterFileKey] = path;
    root["cluster"] = c;
  }
}

namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;

// model.attention.window_size and window_attn_skip_freq, as Megatron-Core reads --window-size W,0 and
// --window-attn-skip-freq: an int N makes every N-th layer (1-based) a full-attention layer, a list gives each layer
// (1 = window, 0 = full).
void read_attention_window(StrictSection& a, ModelSpec& m) {
  m.window_size = a.get_int("window_size", 0, 1, kMaxDim);
  if (!a.has("window_attn_skip_freq")) {
    a.mark("window_attn_skip_freq");
    return;
  }
  if (m.window_size == 0) a.fail("window_attn_skip_freq", "needs model.attention.window_size");
  if (a.child("window_attn_skip_freq").IsSequence()) {
    const std::vector<int64_t> l = a.get_int_list("window_attn_skip_freq", 0, 1);
    if (static_cast<int64_t>(l.size()) != m.num_layers) {
      a.fail("window_attn_skip_freq", "a list needs one 0 or 1 per layer: " + std::to_string(l.size()) +
                                          " given, model.num_layers is " + std::to_string(m.num_layers));
    }
    for (int64_t x : l) m.window_layers.push_back(static_cast<uint8_t>(x));
    return;
  }
  const int64_t every = a.get_int("window_attn_skip_freq", 1, 1, 100000);
  for (int l = 1; l <= m.num_layers; ++l) m.window_layers.push_back(l % every != 0 ? 1 : 0);
}

ModelSpec read_model(StrictSection s) {
  ModelSpec m;
  if (s.has(kHfAssumedKey)) {
    const YAML::Node a = s.child(kHfAssumedKey);
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string k = it->first.Scalar();
      m.hf_assumptions.push_back("model." + k + " = " + it->second.Scalar());
    }
  }
  m.name = s.get_string("name", "model");
  m.num_layers = static_cast<int>(s.require_int("num_layers", 1, 100000));
  m.mtp_layers = static_cast<int>(s.get_int("mtp_layers", 0, 0, 16));
  m.hidden_size = s.require_int("hidden_size", 1, kMaxDim);
  m.num_attention_heads = static_cast<int>(s.require_int("num_attention_heads", 1, 1 << 16));
  m.num_query_groups = static_cast<int>(s.get_int("num_query_groups", 0, 1, 1 << 16));
  m.kv_channels = s.get_int("kv_channels", 0, 1, 1 << 16);
  m.ffn_hidden_size = s.require_int("ffn_hidden_size", 1, kMaxDim);
  m.activation = s.get_enum<Activation>("activation", Activation::Gelu,
                                        {{"gelu", Activation::Gelu}, {"swiglu", Activation::Swiglu}});
  m.normalization = s.get_enum<Normalization>(
      "normalization", Normalization::LayerNorm,
      {{"layernorm", Normalization::LayerNorm}, {"rmsnorm", Normalization::RmsNorm}});
  m.add_bias_linear = s.get_bool("add_bias_linear", m.activation == Activation::Gelu);
  // Megatron's default is 0.1 (GPT-3, BLOOM, MT-NLG trained with it); gated-MLP models (Llama, Mistral, Qwen,
  // DeepSeek) train without dropout.
  m.hidden_dropout = s.get_double("hidden_dropout", m.activation == Activation::Gelu ? 0.1 : 0.0, 0.0, 0.99);
  m.attention_dropout = s.get_double("attention_dropout", m.activation == Activation::Gelu ? 0.1 : 0.0, 0.0, 0.99);
  m.position_embedding = s.get_enum<PositionEmbedding>(
      "position_embedding", m.activation == Activation::Gelu ? PositionEmbedding::Learned : PositionEmbedding::Rope,
      {{"learned", PositionEmbedding::Learned}, {"rope", PositionEmbedding::Rope}});
  m.vocab_size = s.require_int("vocab_size", 1, kMaxDim);
  m.seq_length = s.require_int("seq_length", 1, kMaxDim);
  m.tie_embeddings = s.get_bool("tie_embeddings", false);

  const bool gqa = m.num_query_groups != 0 && m.num_query_groups != m.num_attention_heads;
  m.attention = gqa ? AttentionType::Gqa : AttentionType::Mha;
  if (s.has("attention")) {
    StrictSection a(s.child("attention"), s.key_path("attention"), s.source());
    m.attention = a.get_enum<AttentionType>("type", m.attention,
                                            {{"mha", AttentionType::Mha}, {"gqa", AttentionType::Gqa},
                                             {"mla", AttentionType::Mla}});
    if (m.attention == AttentionType::Mla) {
      m.mla.q_lora_rank = a.get_int("q_lora_rank", 0, 0, kMaxDim);
      m.mla.kv_lora_rank = a.require_int("kv_lora_rank", 1, kMaxDim);
      m.mla.qk_nope_head_dim = a.require_int("qk_nope_head_dim", 1, 1 << 16);
      m.mla.qk_rope_head_dim = a.require_int("qk_rope_head_dim", 1, 1 << 16);
      m.mla.v_head_dim = a.require_int("v_head_dim", 1, 1 << 16);
    }
    read_attention_window(a, m);
    a.finish();
  } else {
    s.mark("attention");
  }

  if (s.has("moe")) {
    StrictSection e(s.child("moe"), s.key_path("moe"), s.source());
    MoeSpec moe;
    moe.num_experts = static_cast<int>(e.require_int("num_experts", 1, 1 << 16));
    moe.topk = static_cast<int>(e.require_int("topk", 1, 1 << 16));
    moe.ffn_hidden_size = e.get_int("ffn_hidden_size", m.ffn_hidden_size, 1, kMaxDim);
    moe.shared_expert_ffn_hidden_size = e.get_int("shared_expert_ffn_hidden_size", 0, 0, kMaxDim);
    moe.token_dispatcher = e.get_enum<TokenDispatcher>(
        "token_dispatcher", TokenDispatcher::AllToAll,
        {{"alltoall", TokenDispatcher::AllToAll}, {"allgather", TokenDispatcher::AllGather}, {"flex", TokenDispatcher::Flex}});
    moe.shared_expert_overlap = e.get_bool("shared_expert_overlap", false);
    moe.permute_fusion = e.get_bool("permute_fusion", true);
    moe.router_num_groups = static_cast<int>(e.get_int("router_num_groups", 0, 0, 1 << 16));
    moe.router_group_topk = static_cast<int>(e.get_int("router_group_topk", 0, 0, 1 << 16));
    moe.layer_freq = static_cast<int>(e.get_int("layer_freq", 1, 1, 100000));
    // first_dense_layers is the (and NeMo's) name for the same count; one of the two.
    if (e.has("first_k_dense") && e.has("first_dense_layers")) {
      e.fail("first_dense_layers", "give first_dense_layers or first_k_dense, not both");
    }
    moe.first_k_dense = static_cast<int>(e.get_int("first_k_dense", 0, 0, 100000));
    if (e.has("first_dense_layers")) moe.first_k_dense = static_cast<int>(e.get_int("first_dense_layers", 0, 0, 100000));
    else e.mark("first_dense_layers");
    if (e.has("capacity_factor")) moe.capacity_factor = e.get_double("capacity_factor", 1.0, 0.01, 1000.0);
    else e.mark("capacity_factor");
    moe.pad_to_capacity = e.get_bool("pad_to_capacity", false);
    if (moe.pad_to_capacity && !moe.capacity_factor) e.fail("pad_to_capacity", "needs moe.capacity_factor (Megatron-LM asserts it)");
    moe.routing_imbalance = e.get_double("routing_imbalance", 1.0, 1.0, static_cast<double>(moe.num_experts));
    if (moe.topk > moe.num_experts) e.fail("topk", "must not exceed moe.num_experts");
    e.finish();
    m.moe = moe;
  } else {
    s.mark("moe");
  }
  s.mark("hf_config");
  s.finish();
  return m;
}

ParallelismSpec read_parallelism(StrictSection s) {
  ParallelismSpec p;
  constexpr int64_t kMaxDeg = 1 << 20;
  p.tensor = static_cast<int>(s.get_int("tensor", 1, 1, kMaxDeg));
  p.pipeline = static_cast<int>(s.get_int("pipeline", 1, 1, kMaxDeg));
  p.data = static_cast<int>(s.get_int("data", 0, 1, kMaxDeg));
  p.context = static_cast<int>(s.get_int("context", 1, 1, kMaxDeg));
  p.cp_comm_type = s.get_enum<CpCommType>("cp_comm_type", CpCommType::P2P,
                                          {{"p2p", CpCommType::P2P}, {"all_gather", CpCommType::AllGather},
                                           {"a2a", CpCommType::A2A}, {"a2a+p2p", CpCommType::A2AP2P}});
  for (int64_t x : s.get_int_list("hierarchical_context_parallel_sizes", 1, kMaxDeg))
    p.hierarchical_context_parallel_sizes.push_back(static_cast<int>(x));
  p.expert = static_cast<int>(s.get_int("expert", 1, 1, kMaxDeg));
  p.expert_tensor = static_cast<int>(s.get_int("expert_tensor", 0, 1, kMaxDeg));
  p.sequence_parallel = s.get_bool("sequence_parallel", false);
  p.virtual_stages = static_cast<int>(s.get_int("virtual_stages", 1, 1, 4096));
  p.pipeline_layout = s.get_string("pipeline_layout", "");
  if (!p.pipeline_layout.empty() && !s.has("virtual_stages")) {
    // As Megatron-Core: the layout's model chunks over the pipeline stages are the virtual stages.
    const size_t chunks = parse_pipeline_layout(p.pipeline_layout, s.source() + ": key " + s.key_path("pipeline_layout") + ": ").layers.size();
    if (chunks % static_cast<size_t>(p.pipeline) != 0 || chunks / static_cast<size_t>(p.pipeline) > 4096) {
      throw InputError(s.source() + ": key " + s.key_path("pipeline_layout") + ": its " + std::to_string(chunks) +
                       " model chunks are not a multiple of parallelism.pipeline " + std::to_string(p.pipeline) +
                       " with at most 4096 virtual stages");
    }
    p.virtual_stages = static_cast<int>(chunks / static_cast<size_t>(p.pipeline));
  }
  p.schedule = s.get_enum<PipelineSchedule>(
      "schedule", p.virtual_stages > 1 ? PipelineSchedule::Interleaved1F1B : PipelineSchedule::OneFOneB,
      {{"gpipe", PipelineSchedule::GPipe}, {"1f1b", PipelineSchedule::OneFOneB},
       {"interleaved-1f1b", PipelineSchedule::Interleaved1F1B}});
  for (int64_t x : s.get_int_list("pipeline_layers", 1, 100000)) p.pipeline_layers.push_back(static_cast<int>(x));
  p.first_stage_layers = static_cast<int>(s.get_int("first_stage_layers", 0, 1, 100000));
  p.last_stage_layers = static_cast<int>(s.get_int("last_stage_layers", 0, 1, 100000));
  p.account_for_embedding_in_pipeline_split = s.get_bool("account_for_embedding_in_pipeline_split", false);
  p.account_for_loss_in_pipeline_split = s.get_bool("account_for_loss_in_pipeline_split", false);
  const bool interleaved = p.schedule == PipelineSchedule::Interleaved1F1B;
  p.overlap_p2p_comm = s.get_bool("overlap_p2p_comm", interleaved);
  if (p.overlap_p2p_comm && !interleaved) {
    s.fail("overlap_p2p_comm", "needs schedule interleaved-1f1b (Megatron-LM overlaps p2p only there)");
  }
  s.finish();
  return p;
}

// training.recompute_modules: a list of Megatron-Core's module names, each at most once.
uint8_t read_recompute_modules(StrictSection& s) {
  const YAML::Node v = s.child("recompute_modules");
  if (!v.IsSequence()) s.fail("recompute_modules", "must be a list of module names (" + recompute_module_names() + ")");
  if (v.size() > 64) s.fail("recompute_modules", "list too long");
  uint8_t bits = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string name = v[i].IsScalar() ? v[i].Scalar() : "";
    const std::optional<RecomputeModule> m = recompute_module_named(name);
    if (!m) s.fail("recompute_modules", "entry " + std::to_string(i) + " '" + name + "' is none of " + recompute_module_names());
    if (bits & module_bit(*m)) s.fail("recompute_modules", "'" + name + "' is listed twice");
    bits |= module_bit(*m);
  }
  return bits;
}

// training keys that name Megatron-Core's or Transformer Engine's options; refused under framework torchtitan.
constexpr const char* kMegatronOnlyTrainingKeys[] = {
    "recompute_modules", "recompute_method", "recompute_num_layers", "distribute_saved_activations",
    "zero1_grad_reduce", "zero3_param_fetch", "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
    "tp_comm_overlap_ag", "tp_comm_overlap_rs", "tp_comm_bulk_dgrad", "tp_comm_bulk_wgrad", "tp_comm_overlap_rs_dgrad",
    "gradient_accumulation_fusion", "overlap_moe_expert_parallel_comm", "delay_wgrad_compute", "cuda_graphs",
    "attention_backend", "cross_entropy_fusion", "fp8_bf16_first_layers", "fp8_bf16_last_layers", "fp8_wgrad",
    "precision_aware_optimizer", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype", "optimizer_offload",
    "optimizer_offload_fraction", "optimizer_offload_overlap", "activation_offload_layers", "bucket_size"};

}  // namespace

std::vector<std::string> training_keys_framework_lacks(Framework target) {
  if (target == Framework::Torchtitan || target == Framework::DeepSpeed) {
    std::vector<std::string> keys(std::begin(kMegatronOnlyTrainingKeys), std::end(kMegatronOnlyTrainingKeys));
    if (target == Framework::DeepSpeed) {
      keys.insert(keys.end(), {"compile", "compile_loss", "fsdp_units", "sdpa_backend"});
    }
    return keys;
  }
  return {"compile", "compile_loss", "fsdp_units", "sdpa_backend"};
}

std::vector<std::string> drop_training_keys_framework_lacks(YAML::Node root, Framework target,
                                                            const std::function<bool(const std::string&)>& kept) {
  std::vector<std::string> dropped;
  YAML::Node training = root["training"];
  if (!training.IsMap()) return dropped;
  for (const std::string& key : training_keys_framework_lacks(target)) {
    if (!training[key] || kept(key)) continue;
    training.remove(key);
    dropped.push_back(key);
  }
  return dropped;
}

std::optional<Framework> framework_named(std::string_view name) {
  if (name == "megatron") return Framework::MegatronCore;
  if (name == "torchtitan") return Framework::Torchtitan;
  if (name == "deepspeed") return Framework::DeepSpeed;
  return std::nullopt;
}

namespace {

TrainingSpec read_training(StrictSection s) {
  TrainingSpec t;
  if (s.has(kInputNotesKey)) {
    const YAML::Node notes = s.child(kInputNotesKey);
    for (const auto& n : notes) t.input_notes.push_back(n.Scalar());
  }
  if (s.has("framework")) {
    const std::string fw = s.get_string("framework", "megatron");
    if (fw == "composer") {
      s.fail("framework", "'" + fw + "' is not modelled yet (megatron, torchtitan, deepspeed); write framework: "
                          "megatron to cost the job with Megatron-Core's kernels and overlaps");
    }
  }
  t.framework = s.get_enum<Framework>("framework", Framework::MegatronCore,
                                      {{"megatron", Framework::MegatronCore}, {"torchtitan", Framework::Torchtitan},
                                       {"deepspeed", Framework::DeepSpeed}});
  t.compile = s.get_bool("compile", false);
  const bool torchtitan = t.framework == Framework::Torchtitan;
  const bool deepspeed = t.framework == Framework::DeepSpeed;
  t.expandable_segments = s.get_bool("expandable_segments", torchtitan);
  t.compile_loss = s.get_bool("compile_loss", t.compile);
  if (t.compile_loss && !t.compile) {
    s.fail("compile_loss", "needs compile: true (torchtitan compiles its loss only with the model)");
  }
  t.fsdp_root_holds_head = s.get_enum<bool>("fsdp_units", false, {{"split", false}, {"root", true}});
  t.sdpa_flash = s.get_enum<bool>("sdpa_backend", false, {{"cudnn", false}, {"flash", true}});
  if (s.has("sdpa_backend") && !torchtitan) {
    s.fail("sdpa_backend", std::string("is the backend of PyTorch's scaled_dot_product_attention (framework: "
                                       "torchtitan); framework ") + name_of(t.framework) + " runs its own attention "
                                       "kernels (Megatron-Core: training.attention_backend)");
  }
  if (s.has("fsdp_units") && !torchtitan) {
    s.fail("fsdp_units", std::string("is how torchtitan's FSDP2 wraps the embedding and output layer (framework: "
                                     "torchtitan); framework ") + name_of(t.framework) + " shards otherwise");
  }
  if (t.compile && !torchtitan) {
    s.fail("compile", std::string("is torchtitan's per-block torch.compile (framework: torchtitan); framework ") +
                          name_of(t.framework) + " runs its kernels as they are");
  }
  if (torchtitan || deepspeed) {
    // Megatron-Core's and Transformer Engine's own options: torchtitan and DeepSpeed have none of them (docs/MODEL.md
    // "Frameworks").
    for (const char* k : kMegatronOnlyTrainingKeys) {
      if (s.has(k)) {
        s.fail(k, std::string("is Megatron-Core's; framework ") + name_of(t.framework) +
                      " has no such option (docs/MODEL.md \"Frameworks\")");
      }
    }
  }
  t.micro_batch_size = static_cast<int>(s.get_int("micro_batch_size", 1, 1, 1 << 16));
  t.global_batch_size = s.require_int("global_batch_size", 1, int64_t{1} << 30);
  t.precision = s.get_enum<Precision>("precision", Precision::Bf16,
                                      {{"fp32", Precision::Fp32}, {"fp16", Precision::Fp16},
                                       {"bf16", Precision::Bf16}, {"fp8", Precision::Fp8},
                                       {"nvfp4", Precision::Nvfp4}});
  t.recompute = s.get_enum<Recompute>("recompute", Recompute::None,
                                      {{"none", Recompute::None}, {"selective", Recompute::Selective},
                                       {"full", Recompute::Full}});
  t.recompute_method = s.get_enum<RecomputeMethod>("recompute_method", RecomputeMethod::Uniform,
                                                   {{"uniform", RecomputeMethod::Uniform}, {"block", RecomputeMethod::Block}});
  t.recompute_num_layers = static_cast<int>(s.get_int("recompute_num_layers", 1, 1, 1 << 20));
  if (s.has("recompute_modules")) t.recompute_modules = read_recompute_modules(s);
  else s.mark("recompute_modules");
  t.distribute_saved_activations = s.get_bool("distribute_saved_activations", false);
  t.distributed_optimizer = s.get_bool("distributed_optimizer", false);
  t.zero_stage = static_cast<int>(s.get_int("zero_stage", 0, 0, 3));
  t.zero1_grad_all_reduce = s.get_enum<bool>("zero1_grad_reduce", false,
                                             {{"reduce_scatter", false}, {"all_reduce", true}});
  t.zero3_param_fetch = s.get_enum<Zero3Fetch>("zero3_param_fetch", Zero3Fetch::Prefetch,
                                               {{"prefetch", Zero3Fetch::Prefetch}, {"blocking", Zero3Fetch::Blocking}});
  if (deepspeed && t.zero_stage != 3) {
    s.fail("zero_stage", "framework deepspeed is modelled at ZeRO stage 3 (its hooks, gathers and bucketed "
                         "reduce-scatters; docs/MODEL.md \"Frameworks\"); stages 0-2 are not yet");
  }
  if (s.has("reduce_bucket_size") && !deepspeed) {
    s.fail("reduce_bucket_size", "is DeepSpeed's zero_optimization.reduce_bucket_size (framework: deepspeed); "
                                 "Megatron-Core's bucket is training.bucket_size");
  }
  t.reduce_bucket_size = s.get_int("reduce_bucket_size", t.reduce_bucket_size, 1, int64_t{1} << 40);
  if (s.has("zero3_hook_us") && !deepspeed) {
    s.fail("zero3_hook_us", "is the host time of DeepSpeed ZeRO-3's module hooks (framework: deepspeed)");
  }
  t.zero3_hook_us = s.get_double("zero3_hook_us", t.zero3_hook_us, 0, 1e6);
  if (deepspeed && spec::quantized_gemms(t.precision)) {
    s.fail("precision", std::string(name_of(t.precision)) + " is not modelled under framework deepspeed (its " +
                            "profile runs the model in bf16, fp16 or fp32)");
  }
  if (torchtitan && t.precision == Precision::Nvfp4) {
    s.fail("precision", "nvfp4 is not modelled under framework torchtitan (torchao's NVFP4 training differs from "
                        "Transformer Engine's recipe modelled here)");
  }
  // FSDP2 always reduces gradients and gathers parameters on its own streams beside the computation; DeepSpeed's
  // ZeRO-3 likewise (overlap_comm, on by default at stage 3).
  t.overlap_grad_reduce = s.get_bool("overlap_grad_reduce", torchtitan || deepspeed);
  t.overlap_param_gather = s.get_bool("overlap_param_gather", torchtitan && t.zero_stage != 3);
  t.tp_comm_overlap = s.get_bool("tp_comm_overlap", false);
  for (const char* k : {"tp_comm_overlap_ag", "tp_comm_overlap_rs", "tp_comm_bulk_dgrad", "tp_comm_bulk_wgrad",
                        "tp_comm_overlap_rs_dgrad"}) {
    if (s.has(k) && !t.tp_comm_overlap) s.fail(k, "applies with training.tp_comm_overlap: true only");
  }
  t.tp_comm_overlap_ag = s.get_bool("tp_comm_overlap_ag", true);
  t.tp_comm_overlap_rs = s.get_bool("tp_comm_overlap_rs", true);
  t.tp_comm_bulk_dgrad = s.get_bool("tp_comm_bulk_dgrad", true);
  t.tp_comm_bulk_wgrad = s.get_bool("tp_comm_bulk_wgrad", true);
  t.tp_comm_overlap_rs_dgrad = s.get_bool("tp_comm_overlap_rs_dgrad", false);
  t.gradient_accumulation_fusion = s.get_bool("gradient_accumulation_fusion", true);
  t.overlap_moe_expert_parallel_comm = s.get_bool("overlap_moe_expert_parallel_comm", false);
  t.delay_wgrad_compute = s.get_bool("delay_wgrad_compute", false);
  t.cuda_graphs = s.get_bool("cuda_graphs", false);
  // torchtitan's Float8 (torchao Float8Linear, tensorwise dynamic scaling): each cast takes the amax of the tensor it
  // casts, which is the current-scaling recipe.
  if (torchtitan && s.has("fp8_recipe") && s.get_string("fp8_recipe", "") != "current") {
    s.fail("fp8_recipe", "framework torchtitan scales fp8 as torchao's tensorwise dynamic scaling: current only");
  }
  const bool fp8 = t.precision == Precision::Fp8;
  t.fp8_recipe = s.get_enum<Fp8Recipe>("fp8_recipe", torchtitan && fp8 ? Fp8Recipe::Current : Fp8Recipe::Delayed,
                                       {{"delayed", Fp8Recipe::Delayed}, {"current", Fp8Recipe::Current},
                                        {"blockwise", Fp8Recipe::Blockwise}, {"mxfp8", Fp8Recipe::Mxfp8}});
  t.fp8_param_gather = s.get_bool("fp8_param_gather", false);
  if (t.fp8_param_gather && t.precision == Precision::Nvfp4) {
    s.fail("fp8_param_gather", "applies to fp8; NVFP4's parameter gather in fp4 (Megatron's --fp4-param-gather) is "
                               "not modelled: its all-gathers are costed in bf16 without it");
  }
  t.fp8_bf16_first_layers = static_cast<int>(s.get_int("fp8_bf16_first_layers", 0, 0, 1 << 20));
  t.fp8_bf16_last_layers = static_cast<int>(s.get_int("fp8_bf16_last_layers", 0, 0, 1 << 20));
  t.fp8_wgrad = s.get_bool("fp8_wgrad", true);
  t.attention_backend = s.get_enum<AttentionBackend>(
      "attention_backend", AttentionBackend::Flash, {{"flash", AttentionBackend::Flash}, {"unfused", AttentionBackend::Unfused}});
  t.cross_entropy_fusion = s.get_enum<CrossEntropyFusion>(
      "cross_entropy_fusion", CrossEntropyFusion::None,
      {{"none", CrossEntropyFusion::None}, {"native", CrossEntropyFusion::Native}, {"te", CrossEntropyFusion::Te}});
  t.precision_aware_optimizer = s.get_bool("precision_aware_optimizer", false);
  // bf16 master weights: Apex's DistributedFusedAdam (NeMo 1.x, `optim.dtype: bf16`) keeps its parameter shard in the
  // state dtype; Megatron-LM's --main-params-dtype offers fp32 and fp16 only (megatron_args.cpp keeps to those).
  t.main_params_bytes = s.get_enum<int>("main_params_dtype", 4, {{"fp32", 4}, {"fp16", 2}, {"bf16", 2}});
  t.exp_avg_bytes = s.get_enum<int>("exp_avg_dtype", 4, {{"fp32", 4}, {"fp16", 2}, {"bf16", 2}, {"fp8", 1}});
  t.exp_avg_sq_bytes = s.get_enum<int>("exp_avg_sq_dtype", 4, {{"fp32", 4}, {"fp16", 2}, {"bf16", 2}, {"fp8", 1}});
  t.optimizer_offload = s.get_bool("optimizer_offload", false);
  t.optimizer_offload_fraction = s.get_double("optimizer_offload_fraction", 1.0, 0.0, 1.0);
  t.optimizer_offload_overlap = s.get_bool("optimizer_offload_overlap", false);
  t.activation_offload_layers = static_cast<int>(s.get_int("activation_offload_layers", 0, 0, 1 << 20));
  if (s.has("grad_reduce_in_fp32")) t.grad_reduce_in_fp32 = s.get_bool("grad_reduce_in_fp32", true);
  else s.mark("grad_reduce_in_fp32");
  t.bucket_size = s.get_int("bucket_size", 0, 1, int64_t{1} << 40);
  s.finish();
  return t;
}

// `bandwidth_default_GBps`: what a section without a bandwidth gets (the documented default: 400 Gb/s per GPU across
// nodes, the GPU's own NVLink or PCIe rate inside one), so `--set cluster.inter_node.transport=efa` alone works.
LinkSpec read_link(StrictSection s, bool inter, double bandwidth_default_GBps) {
  LinkSpec l;
  const bool gbits = s.has("bandwidth_Gbps");
  const bool gbytes = s.has("bandwidth_GBps");
  if (gbits && gbytes) s.fail("bandwidth_Gbps", "give bandwidth_Gbps (bits) or bandwidth_GBps (bytes), not both");
  if (gbits) l.bandwidth_GBps = s.get_double("bandwidth_Gbps", 0, 1e-6, 1e9) / 8.0;
  else if (gbytes) l.bandwidth_GBps = s.get_double("bandwidth_GBps", 0, 1e-6, 1e9);
  else l.bandwidth_GBps = bandwidth_default_GBps;
  s.mark("bandwidth_Gbps");
  s.mark("bandwidth_GBps");
  l.latency_us = s.get_double("latency_us", inter ? 5.0 : 1.0, 0.0, 1e7);
  if (inter) {
    l.topology = s.get_string("topology", "fat-tree");
    std::vector<std::pair<std::string, std::string>> transports;
    for (const std::string_view t : kInterNodeTransports) transports.emplace_back(t, t);
    l.transport = s.get_enum<std::string>("transport", "ib", transports);
    l.bandwidth_efficiency = s.get_double("bandwidth_efficiency", 0, 0.01, 1);
  }
  s.finish();
  return l;
}

// The cluster section, its errors named against the cluster file it came from when a job included one.
StrictSection cluster_section(const YAML::Node& node, const std::string& job_source) {
  std::string source = job_source;
  if (node.IsMap()) {
    const YAML::Node file = node[kClusterFileKey];  // an absent key is an invalid node: ask IsDefined first
    if (file.IsDefined() && file.IsScalar()) source = file.Scalar();
  }
  StrictSection s(node, "cluster", source);
  s.mark(kClusterFileKey);
  return s;
}

ClusterSpec read_cluster(const hw::GpuCatalog& gpus, StrictSection s) {
  ClusterSpec c;
  // The GPU as written ("H100-SXM 96GB HBM2e, 500W") becomes the catalog's name; a power figure in it is the limit.
  // Written as a mapping, it is a catalog GPU (`base`, read the same way) with some of its figures replaced.
  const bool mapping = s.has("gpu") && s.child("gpu").IsMap();
  std::optional<StrictSection> g;
  if (mapping) g.emplace(s.child("gpu"), s.key_path("gpu"), s.source());
  const std::string written = mapping ? g->get_string("base", "") : s.get_string("gpu", c.gpu);
  if (mapping && written.empty()) g->fail("base", "names the catalog GPU the others change (e.g. base: H100-SXM)");
  hw::ResolvedGpu gpu;
  try {
    gpu = hw::resolve_gpu_name(gpus, written);
  } catch (const InputError& e) {
    throw InputError(s.source() + ": " + e.what());  // the file that names the GPU
  }
  c.gpu = gpu.gpu->name;
  c.gpu_notes = gpu.notes;
  double inline_power_W = 0;
  if (mapping) {
    GpuOverride& o = c.gpu_override;
    o.memory_GiB = g->get_double("memory_GiB", 0, 1, 4096);
    o.memory_bandwidth_TBps = g->get_double("memory_bandwidth_TBps", 0, 0.1, 100);
    o.sm_count = static_cast<int>(g->get_int("sm_count", 0, 1, 4096));
    o.nvlink_GBps = g->get_double("nvlink_GBps", 0, 1, 100000);
    inline_power_W = g->get_double("power_limit_W", 0, 1, 1e5);
    g->finish();
    if (!o.any() && inline_power_W == 0) {
      g->fail("base", "a mapping changes at least one of memory_GiB, memory_bandwidth_TBps, sm_count, nvlink_GBps, "
                      "power_limit_W (else write gpu: " + written + ")");
    }
    if (o.any()) {
      std::vector<std::string> parts;
      auto part = [&](double v, const char* what) {
        std::ostringstream p;
        p << v << what;
        parts.push_back(p.str());
      };
      if (o.memory_GiB > 0) part(o.memory_GiB, " GiB of memory");
      if (o.memory_bandwidth_TBps > 0) part(o.memory_bandwidth_TBps, " TB/s of memory bandwidth");
      if (o.sm_count > 0) part(o.sm_count, " SMs");
      if (o.nvlink_GBps > 0) part(o.nvlink_GBps, " GB/s NVLink per direction");
      std::string note = "cluster.gpu: " + c.gpu + " with ";
      for (size_t i = 0; i < parts.size(); ++i) note += (i ? ", " : "") + parts[i];
      c.gpu_notes.push_back(note + " (the catalog's figures otherwise)");
    }
  }
  c.power_limit_W = s.get_double("power_limit_W", 0.0, 1.0, 1e5);
  if (inline_power_W > 0) {
    if (c.power_limit_W > 0 && c.power_limit_W != inline_power_W) {
      s.fail("power_limit_W", "is " + std::to_string(static_cast<int>(c.power_limit_W)) + " W but cluster.gpu's "
                              "power_limit_W says " + std::to_string(static_cast<int>(inline_power_W)) + " W");
    }
    c.power_limit_W = inline_power_W;
  }
  if (gpu.power_limit_W) {
    if (c.power_limit_W > 0 && c.power_limit_W != *gpu.power_limit_W) {
      s.fail("power_limit_W", "is " + std::to_string(static_cast<int>(c.power_limit_W)) + " W but cluster.gpu '" +
                                  written + "' says " + std::to_string(static_cast<int>(*gpu.power_limit_W)) + " W");
    }
    c.power_limit_W = *gpu.power_limit_W;
  }
  if (c.power_limit_W > 0) {
    const double tdp = gpu.gpu->tdp_W;
    if (tdp <= 0) s.fail("power_limit_W", "GPU " + c.gpu + " has no tdp_W in the GPU catalog to limit from");
    if (c.power_limit_W > tdp || c.power_limit_W < 0.25 * tdp) {
      s.fail("power_limit_W", std::to_string(static_cast<int>(c.power_limit_W)) + " W: must be between a quarter of " +
                                  c.gpu + "'s " + std::to_string(static_cast<int>(tdp)) + " W and " +
                                  std::to_string(static_cast<int>(tdp)) + " W");
    }
    if (c.power_limit_W == tdp) c.power_limit_W = 0;  // the default power: nothing to model
  }
  c.num_gpus = static_cast<int>(s.require_int("num_gpus", 1, 1 << 20));
  c.gpus_per_node = static_cast<int>(s.get_int("gpus_per_node", 8, 1, 1 << 16));
  // The GPU's own NVLink (or PCIe) rate from the catalog: an A100 node is not an H100 node.
  const double gpu_link_GBps = c.gpu_override.nvlink_GBps > 0 ? c.gpu_override.nvlink_GBps : gpu.gpu->intra_node_GBps;
  if (s.has("intra_node")) {
    c.intra_node =
        read_link(StrictSection(s.child("intra_node"), s.key_path("intra_node"), s.source()), false, gpu_link_GBps);
  } else {
    s.mark("intra_node");
    c.intra_node.bandwidth_GBps = gpu_link_GBps;
  }
  if (s.has("inter_node"))
    c.inter_node = read_link(StrictSection(s.child("inter_node"), s.key_path("inter_node"), s.source()), true,
                             c.inter_node.bandwidth_GBps);
  else s.mark("inter_node");
  for (const auto& [rank, factor] : s.get_int_double_map("slow_ranks", 0, (1 << 20) - 1, 1e-3, 1e6)) {
    c.slow_ranks[static_cast<int>(rank)] = factor;
  }
  c.host_to_device_GBps = s.get_double("host_to_device_GBps", 0.0, 1e-3, 1e5);
  c.cpu_optimizer_GBps = s.get_double("cpu_optimizer_GBps", 0.0, 1e-3, 1e5);
  if (s.has("network")) c.network = read_network_spec(StrictSection(s.child("network"), s.key_path("network"), s.source()), c);
  else s.mark("network");
  c.nvlink_domain = static_cast<int>(s.get_int("nvlink_domain", 0, 1, 1 << 16));
  if (s.has("nccl_env")) {
    const YAML::Node env = s.child("nccl_env");
    if (!env.IsMap()) s.fail("nccl_env", "must be a mapping of NCCL variables to values (NCCL_ALGO: Ring,Tree)");
    std::vector<std::pair<std::string, std::string>> vars;
    for (auto it = env.begin(); it != env.end(); ++it) {
      if (!it->second.IsScalar()) s.fail("nccl_env." + it->first.Scalar(), "must be a value as the variable holds it");
      vars.emplace_back(it->first.Scalar(), it->second.Scalar());
    }
    try {
      c.nccl_env = parse_nccl_env(vars, s.key_path("nccl_env"));
    } catch (const InputError& e) {
      throw InputError(s.source() + ": key " + e.what());
    }
  } else {
    s.mark("nccl_env");
  }
  s.finish();
  apply_nvlink_domain(c, s.source());
  return c;
}

SimulationSpec read_simulation(StrictSection s) {
  SimulationSpec sim;
  sim.comm_model = s.get_enum<CommModel>("comm_model", CommModel::AlphaBeta,
                                         {{"alpha-beta", CommModel::AlphaBeta}, {"nccl", CommModel::Nccl},
                                          {"flow", CommModel::Flow}});
  sim.overlap_model_given = s.has("overlap_model");
  sim.overlap_model = s.get_enum<OverlapModel>("overlap_model", OverlapModel::SmShare,
                                               {{"none", OverlapModel::None},
                                                {"coefficients", OverlapModel::Coefficients},
                                                {"xgboost", OverlapModel::XGBoost},
                                                {"sm_share", OverlapModel::SmShare}});
  sim.calibration_store = s.get_string("calibration_store", "");
  sim.nccl_version = s.get_string("nccl_version", "");
  if (!sim.nccl_version.empty() && !cost::parse_nccl_version(sim.nccl_version)) {
    s.fail("nccl_version", "must be an NCCL release such as 2.21.5, got '" + sim.nccl_version + "'");
  }
  sim.overlap_file = s.get_string("overlap_file", "");
  sim.sustained_clock = s.get_double("sustained_clock", 0.0, 0.01, 2.0);
  sim.attention_scale = s.get_double("attention_scale", 0.0, 0.05, 4.0);
  sim.host_time_scale = s.get_double("host_time_scale", -1.0, 0.0, 10.0);
  sim.all_ranks = s.get_bool("all_ranks", false);
  s.finish();
  return sim;
}

// A scalar or a sequence of scalars as "V1,V2".
std::string joined_values(const YAML::Node& v, const StrictSection& s, const std::string& key) {
  if (v.IsScalar()) return v.Scalar();
  if (!v.IsSequence() || v.size() == 0) s.fail(key, "each value must be a scalar or a list of scalars");
  std::string out;
  for (const auto& x : v) {
    if (!x.IsScalar()) s.fail(key, "each value must be a scalar or a list of scalars");
    out += (out.empty() ? "" : ",") + x.Scalar();
  }
  return out;
}

PlanSection read_plan(StrictSection s) {
  PlanSection p;
  p.framework = s.get_string("framework", "");
  if (!p.framework.empty() && !framework_named(p.framework)) {
    s.fail("framework", "must be megatron, torchtitan or deepspeed");
  }
  p.max_tp_per_nvlink_domain = static_cast<int>(s.get_int("max_tp_per_nvlink_domain", 0, 1, 1 << 16));
  auto read_map = [&](const char* key, std::vector<std::string>& out, bool lists) {
    if (!s.has(key)) return;
    const YAML::Node m = s.child(key);
    if (m.IsSequence() && std::string(key) == "exclude") {  // switches: [tp_comm_overlap, ...]
      for (const auto& x : m) {
        if (!x.IsScalar()) s.fail(key, "a list of switches (e.g. [tp_comm_overlap]) or a mapping KEY: [V1, V2]");
        out.push_back(x.Scalar());
      }
      return;
    }
    if (!m.IsMap()) s.fail(key, std::string("must be a mapping KEY: ") + (lists ? "[V1, V2]" : "VALUE"));
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!lists && !it->second.IsScalar()) s.fail(key, "each value must be a scalar (KEY: VALUE)");
      out.push_back(it->first.Scalar() + "=" + joined_values(it->second, s, key));
    }
  };
  read_map("fix", p.fix, false);
  read_map("allow", p.allow, true);
  read_map("exclude", p.exclude, true);
  s.finish();
  return p;
}

JobSpec read_job(const hw::GpuCatalog& gpus, const YAML::Node& root, const std::string& source) {
  StrictSection top(root, "", source);
  JobSpec job;
  job.source = source;
  if (!top.has("model")) top.fail("model", "is required");
  if (!top.has("cluster")) top.fail("cluster", "is required");
  if (!top.has("training")) top.fail("training", "is required");
  job.model = read_model(StrictSection(top.child("model"), "model", source));
  job.parallelism = read_parallelism(StrictSection(top.child("parallelism"), "parallelism", source));
  job.training = read_training(StrictSection(top.child("training"), "training", source));
  job.cluster = read_cluster(gpus, cluster_section(top.child("cluster"), source));
  job.simulation = read_simulation(StrictSection(top.child("simulation"), "simulation", source));
  job.plan = read_plan(StrictSection(top.child("plan"), "plan", source));
  top.finish();
  job.cluster.network_notes = unused_network_notes(job.cluster, job.simulation.comm_model);
  validate(gpus, job);
  return job;
}

}  // namespace

JobSpec job_from_node(const hw::GpuCatalog& gpus, const YAML::Node& root, const std::string& source) {
  if (!root || !root.IsMap()) throw InputError(source + ": a job must be a mapping with model, parallelism, training, cluster");
  try {
    return read_job(gpus, root, source);
  } catch (const InputError&) {
    // A key or value as another tool spells it is refused anyway (an unknown key, a value out of its set): whatever
    // refused the job, such a spelling is named first, with stepsim's. Looked for only on refusal: a job that loads
    // has none, and the search walks every key.
    const YAML::Node cluster_node = root["cluster"];  // an absent key is an invalid node: ask IsDefined first
    refuse_foreign_spellings(root, source,
                             cluster_node.IsDefined() ? cluster_section(cluster_node, source).source() : source);
    throw;
  }
}

JobSpec job_from_node(const hw::GpuCatalog& gpus, const YAML::Node& root, const std::string& source,
                      const std::vector<std::string>& overrides) {
  try {
    return job_from_node(gpus, root, source);
  } catch (const InputError& e) {
    // A key that came from --set is blamed on the flag, not on the file: "FILE: unknown key PATH ..." and
    // "FILE: key PATH: RULE".
    const std::string msg = e.what();
    for (const std::string_view marker : {std::string_view(": unknown key "), std::string_view(": key ")}) {
      const size_t at = msg.find(marker);
      if (at == std::string::npos) continue;
      const size_t from = at + marker.size();
      const size_t end = msg.find_first_of(" :", from);
      const std::string path = msg.substr(from, end == std::string::npos ? std::string::npos : end - from);
      for (const std::string& ov : overrides) {
        if (ov.substr(0, ov.find('=')) == path) throw InputError("--set " + ov + msg.substr(at));
      }
    }
    throw;
  }
}

JobSpec load_job_file(const hw::GpuCatalog& gpus, const std::string& path, const std::vector<std::string>& overrides) {
  return job_from_node(gpus, load_job_tree(path, overrides), path, overrides);
}

namespace {

// Another tool's file given where a job is expected: named as what it is, with the option that reads it.
void refuse_other_file_kinds(const std::string& path, const YAML::Node& root) {
  if (!root.IsMap() || root["model"].IsDefined()) return;
  auto has = [&](const char* k) { return root[k].IsDefined(); };
  if (has("zero_optimization") || has("train_micro_batch_size_per_gpu") || has("train_batch_size")) {
    throw InputError(path + ": a DeepSpeed config, not a job: give it as --deepspeed-config " + path +
                     " --hf-config CONFIG.json --cluster CLUSTER.yaml (docs/USAGE.md, \"DeepSpeed config\")");
  }
  if (has("model_type") || has("architectures") || has("num_hidden_layers")) {
    throw InputError(path + ": a Hugging Face config.json, not a job: give a job file with it as its model (JOB.yaml "
                     "--hf-config " + path + ", or model: {hf_config: " + path + "} in the job), or it with "
                     "--deepspeed-config DS.json --hf-config " + path + " --cluster CLUSTER.yaml (docs/USAGE.md)");
  }
}

}  // namespace

YAML::Node load_job_tree(const std::string& path, const std::vector<std::string>& overrides,
                         const std::string& hf_config_path) {
  if (fs::path(path).extension() == ".toml") {
    throw InputError(path + ": a TOML file, not a job (YAML): a torchtitan config is read with --torchtitan-config " +
                     path + " --cluster CLUSTER.yaml (docs/USAGE.md)");
  }
  YAML::Node root = parse_yaml(read_text_file(path, "job file"), path);
  refuse_other_file_kinds(path, root);
  if (!hf_config_path.empty()) {
    if (root.IsMap() && root["model"].IsMap() && root["model"]["hf_config"].IsDefined()) {
      throw InputError(path + ": key model.hf_config: the job names its Hugging Face config and --hf-config gives "
                       "another; give one of them");
    }
    if (root.IsMap()) {
      const YAML::Node model = root["model"].IsMap() ? root["model"] : YAML::Node(YAML::NodeType::Map);
      const std::string hf = read_text_file(hf_config_path, "Hugging Face config");
      root["model"] = model_from_hf_config(hf, hf_config_path, model);
    }
  }
  const std::string base = fs::path(path).parent_path().string();
  try {
    resolve_includes(root, base.empty() ? "." : base);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    // Messages about keys of this file get the file's name in front.
    if (msg.rfind("key ", 0) == 0) throw InputError(path + ": " + msg);
    throw;
  }
  apply_overrides(root, overrides);
  return root;
}

JobSpec load_megatron_job(const hw::GpuCatalog& gpus, const std::string& args, const std::string& cluster_path,
                          const std::vector<std::string>& overrides) {
  return job_from_node(gpus, load_megatron_tree(args, cluster_path, overrides), "megatron-args", overrides);
}

YAML::Node load_megatron_tree(const std::string& args, const std::string& cluster_path,
                              const std::vector<std::string>& overrides) {
  YAML::Node root = megatron_args_to_job_node(args);
  root["cluster"] = cluster_path;
  resolve_includes(root, ".");
  apply_overrides(root, overrides);
  return root;
}

}  // namespace stepsim::spec

namespace stepsim::spec {

ClusterSpec load_cluster(const hw::GpuCatalog& gpus, const std::string& cluster_path, int num_gpus, int gpus_per_node,
                         const std::vector<std::string>& overrides) {
  YAML::Node root(YAML::NodeType::Map);
  if (!cluster_path.empty()) {
    root["cluster"] = cluster_path;
    resolve_includes(root, ".");
  } else {
    root["cluster"] = YAML::Node(YAML::NodeType::Map);
  }
  root["cluster"]["num_gpus"] = num_gpus;
  // A flag's value wins; without one the cluster file's own gpus_per_node stands (8 when it has none).
  const bool from_file = gpus_per_node <= 0 && root["cluster"]["gpus_per_node"].IsDefined();
  if (!from_file) root["cluster"]["gpus_per_node"] = gpus_per_node > 0 ? gpus_per_node : 8;
  apply_overrides(root, overrides);
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it->first.Scalar() != "cluster") throw InputError("--set " + it->first.Scalar() + ": only cluster.* keys apply here");
  }
  ClusterSpec c = read_cluster(gpus, cluster_section(root["cluster"], cluster_path.empty() ? std::string("cluster") : cluster_path));
  if (c.gpus_per_node > c.num_gpus) c.gpus_per_node = c.num_gpus;
  if (c.num_gpus % c.gpus_per_node != 0) {
    throw InputError("--gpus " + std::to_string(c.num_gpus) + ": must be a multiple of " +
                     (from_file ? cluster_path + "'s gpus_per_node " : std::string("--gpus-per-node ")) +
                     std::to_string(c.gpus_per_node));
  }
  return c;
}

}  // namespace stepsim::spec
