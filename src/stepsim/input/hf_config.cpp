// Hugging Face config.json -> `model:` section. Key names and defaults follow the transformers
// configuration classes (LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, Qwen2MoeConfig,
// GPT2Config, GPTNeoXConfig) and DeepSeek's own configuration_deepseek.py for V2/V3.
#include "stepsim/input/hf_config.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/input/strict_json.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/io/printable.hpp"
#include "stepsim/input/job_loader.hpp"

namespace stepsim::spec {
namespace {

using nlohmann::json;

// Every size we emit must fit an int32: real models are far below, and the simulator multiplies
// these freely, so a hostile 2^40 must be refused here rather than overflow later.
constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();
constexpr size_t kMaxNameLength = 1024;

enum class Family { Llama, Mistral, Mixtral, Qwen2, Qwen2Moe, Gpt2, GptNeox, DeepseekV2, DeepseekV3 };

struct FamilyName {
  const char* model_type;
  const char* architecture;
  Family family;
};

constexpr FamilyName kFamilies[] = {
    {"llama", "LlamaForCausalLM", Family::Llama},
    {"mistral", "MistralForCausalLM", Family::Mistral},
    {"mixtral", "MixtralForCausalLM", Family::Mixtral},
    {"qwen2", "Qwen2ForCausalLM", Family::Qwen2},
    {"qwen2_moe", "Qwen2MoeForCausalLM", Family::Qwen2Moe},
    {"gpt2", "GPT2LMHeadModel", Family::Gpt2},
    {"gpt_neox", "GPTNeoXForCausalLM", Family::GptNeox},
    {"deepseek_v2", "DeepseekV2ForCausalLM", Family::DeepseekV2},
    {"deepseek_v3", "DeepseekV3ForCausalLM", Family::DeepseekV3},
};

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a non-integer number";
    default: return "a number";
  }
}

// Typed, checked access to the top-level keys of one config.
class Config {
 public:
  Config(const json& j, const std::string& source) : j_(j), source_(source) {}

  [[noreturn]] void fail(const std::string& key, const std::string& rule) const {
    throw InputError(source_ + ": " + key + ": " + rule);
  }

  // nullptr when absent; a JSON null counts as absent (transformers writes None as null).
  const json* get(const std::string& key) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool present(const std::string& key) const { return j_.contains(key); }

  int64_t to_int(const json& v, const std::string& key, int64_t min) const {
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(kMaxSize))
        fail(key, "must be at most " + std::to_string(kMaxSize));
      return check_min(static_cast<int64_t>(v.get<uint64_t>()), key, min);
    }
    if (v.is_number_integer()) {
      const int64_t x = v.get<int64_t>();
      if (x > kMaxSize) fail(key, "must be at most " + std::to_string(kMaxSize));
      return check_min(x, key, min);
    }
    fail(key, std::string("must be an integer, got ") + type_name(v));
  }

  int64_t req_int(const std::string& key, int64_t min = 1) const {
    const json* v = get(key);
    if (!v) fail(key, present(key) ? "must be an integer, got null" : "missing (required)");
    return to_int(*v, key, min);
  }
  std::optional<int64_t> opt_int(const std::string& key, int64_t min = 1) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    return to_int(*v, key, min);
  }
  bool opt_bool(const std::string& key, bool dflt) const {
    const json* v = get(key);
    if (!v) return dflt;
    if (!v->is_boolean()) fail(key, std::string("must be true or false, got ") + type_name(*v));
    return v->get<bool>();
  }
  // A dropout probability in [0, 1); absent = `dflt`.
  double opt_probability(const std::string& key, double dflt) const {
    const json* v = get(key);
    if (!v) return dflt;
    if (!v->is_number()) fail(key, std::string("must be a number, got ") + type_name(*v));
    const double p = v->get<double>();
    if (!(p >= 0.0 && p < 1.0)) fail(key, "must be in [0, 1)");
    return p;
  }
  std::optional<std::string> opt_string(const std::string& key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(key, std::string("must be a string, got ") + type_name(*v));
    return v->get<std::string>();
  }

  // a*b for two checked sizes, refused when the product leaves the int32 range.
  int64_t product(int64_t a, int64_t b, const std::string& key) const {
    if (a != 0 && b > kMaxSize / a) fail(key, "derived size exceeds " + std::to_string(kMaxSize));
    return a * b;
  }

 private:
  int64_t check_min(int64_t x, const std::string& key, int64_t min) const {
    if (x < min) fail(key, "must be " + std::string(min == 0 ? "non-negative" : "positive") + ", got " + std::to_string(x));
    return x;
  }

  const json& j_;
  const std::string& source_;
};

Family detect_family(const Config& c) {
  if (auto mt = c.opt_string("model_type")) {
    for (const auto& f : kFamilies)
      if (*mt == f.model_type) return f.family;
    c.fail("model_type", "unsupported '" + printable(*mt) +
                             "' (supported: llama, mistral, mixtral, qwen2, qwen2_moe, gpt2, gpt_neox, "
                             "deepseek_v2, deepseek_v3)");
  }
  const json* arch = c.get("architectures");
  if (!arch) c.fail("model_type", "missing, and no architectures list to infer it from");
  if (!arch->is_array()) c.fail("architectures", std::string("must be an array of strings, got ") + type_name(*arch));
  for (size_t i = 0; i < arch->size(); ++i) {
    const json& a = (*arch)[i];
    if (!a.is_string())
      c.fail("architectures[" + std::to_string(i) + "]", std::string("must be a string, got ") + type_name(a));
    for (const auto& f : kFamilies)
      if (a.get<std::string>() == f.architecture) return f.family;
  }
  c.fail("architectures", "no supported architecture (e.g. LlamaForCausalLM) and no model_type");
}

const char* model_type_of(Family f) {
  for (const auto& n : kFamilies)
    if (n.family == f) return n.model_type;
  return "model";
}

struct Moe {
  int64_t num_experts = 0;
  int64_t topk = 0;
  int64_t ffn = 0;
  int64_t shared_ffn = 0;
  int64_t layer_freq = 1;
  int64_t first_k_dense = 0;
  int64_t router_groups = 0, router_group_topk = 0;  // DeepSeek's n_group / topk_group (group-limited routing)
};

struct Mla {
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope = 0, qk_rope = 0, v_head_dim = 0;
};

struct Model {
  std::string name;
  int64_t num_layers = 0, hidden = 0, heads = 0, query_groups = 0, kv_channels = 0, ffn = 0;
  int64_t vocab = 0, seq_length = 0;
  bool swiglu = true, rmsnorm = true, bias = false, tie = false;
  bool rope = true;  // every supported family but GPT-2 uses rotary embeddings
  double hidden_dropout = 0.0;  // residual dropout; the Llama-style families have none
  double attention_dropout = 0.0;  // dropout of the attention probabilities (transformers' configs default to 0)
  bool mla = false;
  int64_t window = 0;              // sliding window: keys before the query (Megatron's LEFT); 0 = none
  std::vector<int> window_layers;  // per layer, 1 = windowed; empty = every layer
  int64_t mtp_layers = 0;  // num_nextn_predict_layers (DeepSeek-V3)
  Mla mla_dims;
  std::optional<Moe> moe;
  // Job keys whose value was not in the config (a default, or another key standing in): key -> what was assumed.
  std::map<std::string, std::string> assumed;
};

// Sliding-window attention as transformers runs it: `sliding_window` keys per query, the query itself included
// (FlashAttention's window_size = sliding_window - 1 before it), on the layers `layer_types` names
// "sliding_attention"; without layer_types on every layer, or for Qwen2 on the layers from max_window_layers on
// (Qwen2Config). use_sliding_window false (Qwen2's default) turns it off.
void read_sliding_window(const Config& c, Family fam, Model& m) {
  const json* w = c.get("sliding_window");
  const bool qwen = fam == Family::Qwen2 || fam == Family::Qwen2Moe;
  if (!w || !c.opt_bool("use_sliding_window", !qwen)) return;
  m.window = c.to_int(*w, "sliding_window", 1) - 1;
  if (m.window == 0) c.fail("sliding_window", "1 leaves each query only itself; give at least 2");
  if (const json* types = c.get("layer_types")) {
    if (!types->is_array() || static_cast<int64_t>(types->size()) != m.num_layers) {
      c.fail("layer_types", "must list one type per layer (" + std::to_string(m.num_layers) + ")");
    }
    for (const json& t : *types) {
      if (t == "sliding_attention") m.window_layers.push_back(1);
      else if (t == "full_attention") m.window_layers.push_back(0);
      else c.fail("layer_types", "each must be \"sliding_attention\" or \"full_attention\"");
    }
  } else if (qwen) {
    const int64_t from = c.opt_int("max_window_layers", 0).value_or(28);
    for (int64_t l = 0; l < m.num_layers; ++l) m.window_layers.push_back(l >= from ? 1 : 0);
  }
  if (!m.window_layers.empty() &&
      std::none_of(m.window_layers.begin(), m.window_layers.end(), [](int x) { return x == 1; })) {
    m.window = 0;  // no layer uses the window
    m.window_layers.clear();
  }
}

void check_topk(const Config& c, const std::string& topk_key, int64_t topk, int64_t experts) {
  if (topk > experts)
    c.fail(topk_key, "must not exceed the number of experts (" + std::to_string(experts) + "), got " +
                         std::to_string(topk));
}

// Dense fields shared by the Llama-style families (and DeepSeek's attention/MLP sizes).
void read_llama_style(const Config& c, Model& m, bool mla) {
  m.num_layers = c.req_int("num_hidden_layers");
  m.hidden = c.req_int("hidden_size");
  m.heads = c.req_int("num_attention_heads");
  m.ffn = c.req_int("intermediate_size");
  m.vocab = c.req_int("vocab_size");
  m.seq_length = c.req_int("max_position_embeddings");
  m.query_groups = c.opt_int("num_key_value_heads").value_or(m.heads);  // absent = MHA (transformers)
  if (m.query_groups > m.heads || m.heads % m.query_groups != 0)
    c.fail("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(m.heads) + "), got " +
                                      std::to_string(m.query_groups));
  if (auto hd = c.opt_int("head_dim")) {
    m.kv_channels = *hd;
  } else if (!mla) {  // MLA head widths come from the *_head_dim keys instead
    if (m.hidden % m.heads != 0)
      c.fail("hidden_size", "not divisible by num_attention_heads (" + std::to_string(m.heads) +
                                ") and no head_dim given");
    m.kv_channels = m.hidden / m.heads;
  }
  // The gated MLP computes act(gate) * up; only the SiLU form is SwiGLU.
  const std::string act = c.opt_string("hidden_act").value_or("silu");
  if (act != "silu" && act != "swish")
    c.fail("hidden_act", "'" + printable(act) + "' is not supported for a gated MLP (silu or swish)");
  m.swiglu = true;
  m.rmsnorm = true;
  m.tie = c.opt_bool("tie_word_embeddings", false);
  m.attention_dropout = c.opt_probability("attention_dropout", 0.0);  // LlamaConfig's (and its kin's) default
}

// Non-gated GELU-family MLPs cost the same two GEMMs whichever GELU approximation is used.
void check_gelu(const Config& c, const std::string& key, const std::string& act) {
  if (act.find("gelu") == std::string::npos && act != "relu")
    c.fail(key, "'" + printable(act) + "' is not supported (a GELU variant or relu)");
}

void read_gpt2(const Config& c, Model& m) {
  m.num_layers = c.req_int("n_layer");
  m.hidden = c.req_int("n_embd");
  m.heads = c.req_int("n_head");
  if (m.hidden % m.heads != 0)
    c.fail("n_embd", "not divisible by n_head (" + std::to_string(m.heads) + ")");
  m.query_groups = m.heads;
  m.kv_channels = m.hidden / m.heads;
  // n_inner = None means 4 * n_embd (GPT2MLP).
  m.ffn = c.opt_int("n_inner").value_or(c.product(4, m.hidden, "n_embd"));
  if (!c.get("n_inner")) {
    m.assumed["ffn_hidden_size"] = std::to_string(m.ffn) + " = 4 x n_embd: n_inner absent (GPT2MLP's default)";
  }
  m.vocab = c.req_int("vocab_size");
  m.seq_length = c.req_int("n_positions");
  check_gelu(c, "activation_function", c.opt_string("activation_function").value_or("gelu_new"));
  m.swiglu = false;
  m.rmsnorm = false;
  m.bias = true;
  m.rope = false;  // learned absolute positions (wpe)
  m.hidden_dropout = c.opt_probability("resid_pdrop", 0.1);  // GPT2Config's default
  if (!c.get("resid_pdrop")) m.assumed["hidden_dropout"] = "0.1: resid_pdrop absent (GPT2Config's default)";
  m.attention_dropout = c.opt_probability("attn_pdrop", 0.1);  // GPT2Config's default
  if (!c.get("attn_pdrop")) m.assumed["attention_dropout"] = "0.1: attn_pdrop absent (GPT2Config's default)";
  m.tie = c.opt_bool("tie_word_embeddings", true);  // PretrainedConfig default; GPT-2 ties
}

void read_gpt_neox(const Config& c, Model& m) {
  m.num_layers = c.req_int("num_hidden_layers");
  m.hidden = c.req_int("hidden_size");
  m.heads = c.req_int("num_attention_heads");
  if (m.hidden % m.heads != 0)
    c.fail("hidden_size", "not divisible by num_attention_heads (" + std::to_string(m.heads) + ")");
  m.query_groups = m.heads;
  m.kv_channels = m.hidden / m.heads;
  m.ffn = c.req_int("intermediate_size");
  m.vocab = c.req_int("vocab_size");
  m.seq_length = c.req_int("max_position_embeddings");
  check_gelu(c, "hidden_act", c.opt_string("hidden_act").value_or("gelu"));
  // rotary_pct and use_parallel_residual change no field of the model section (partial RoPE is
  // elementwise; the parallel residual reorders, not resizes, the GEMMs); they are only type-checked.
  if (const json* pct = c.get("rotary_pct")) {
    if (!pct->is_number()) c.fail("rotary_pct", std::string("must be a number, got ") + type_name(*pct));
    const double p = pct->get<double>();
    if (!(p > 0.0 && p <= 1.0)) c.fail("rotary_pct", "must be in (0, 1]");
  }
  c.opt_bool("use_parallel_residual", true);
  m.hidden_dropout = c.opt_probability("hidden_dropout", 0.0);  // GPTNeoXConfig's default
  m.attention_dropout = c.opt_probability("attention_dropout", 0.0);  // GPTNeoXConfig's default
  m.swiglu = false;
  m.rmsnorm = false;
  m.bias = true;
  m.tie = c.opt_bool("tie_word_embeddings", false);
}

void read_mixtral_moe(const Config& c, Model& m) {
  Moe moe;
  moe.num_experts = c.req_int("num_local_experts");
  moe.topk = c.req_int("num_experts_per_tok");
  check_topk(c, "num_experts_per_tok", moe.topk, moe.num_experts);
  moe.ffn = m.ffn;  // Mixtral's intermediate_size is the per-expert size; every layer is MoE
  m.moe = moe;
}

// Qwen2-MoE: layer i is MoE iff i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0.
// The schema's form is "dense for i < first_k_dense, then every layer_freq-th": with step s the MoE
// layers are s-1, 2s-1, ...; mlp_only_layers is representable only when it removes a prefix of them.
void read_qwen2_moe(const Config& c, Model& m) {
  const int64_t experts = c.req_int("num_experts", 0);
  const int64_t topk = c.req_int("num_experts_per_tok");
  const int64_t moe_ffn = c.req_int("moe_intermediate_size");
  const int64_t shared = c.req_int("shared_expert_intermediate_size", 0);
  const int64_t step = c.opt_int("decoder_sparse_step").value_or(1);
  std::vector<int64_t> removed;  // MoE-candidate layers turned dense by mlp_only_layers
  if (const json* only = c.get("mlp_only_layers")) {
    if (!only->is_array()) c.fail("mlp_only_layers", std::string("must be an array of integers, got ") + type_name(*only));
    for (size_t i = 0; i < only->size(); ++i) {
      const int64_t layer = c.to_int((*only)[i], "mlp_only_layers[" + std::to_string(i) + "]", 0);
      if (layer < m.num_layers && (layer + 1) % step == 0) removed.push_back(layer);
    }
  }
  if (experts == 0) return;  // transformers builds dense MLPs everywhere
  check_topk(c, "num_experts_per_tok", topk, experts);
  std::sort(removed.begin(), removed.end());
  removed.erase(std::unique(removed.begin(), removed.end()), removed.end());
  for (size_t i = 0; i < removed.size(); ++i)
    if (removed[i] != static_cast<int64_t>(i + 1) * step - 1)
      c.fail("mlp_only_layers", "dense layers between MoE layers are not supported (only a leading run of dense layers)");
  const int64_t first = (static_cast<int64_t>(removed.size()) + 1) * step - 1;
  if (first >= m.num_layers) return;  // no layer ends up MoE
  Moe moe;
  moe.num_experts = experts;
  moe.topk = topk;
  moe.ffn = moe_ffn;
  moe.shared_ffn = shared;
  moe.layer_freq = step;
  moe.first_k_dense = first;
  m.moe = moe;
}

// DeepSeek: layer i is MoE iff n_routed_experts is set, i >= first_k_dense_replace and
// i % moe_layer_freq == 0 (modeling_deepseek.py). The first MoE layer is therefore
// ceil(k / f) * f, and every f-th after it.
void read_deepseek(const Config& c, Model& m) {
  // MLA: q_lora_rank = null means queries are not compressed (V2-Lite).
  if (!c.present("q_lora_rank")) c.fail("q_lora_rank", "missing (required; null means no query compression)");
  m.mla = true;
  m.mla_dims.q_lora_rank = c.opt_int("q_lora_rank").value_or(0);
  m.mla_dims.kv_lora_rank = c.req_int("kv_lora_rank");
  m.mla_dims.qk_nope = c.req_int("qk_nope_head_dim");
  m.mla_dims.qk_rope = c.req_int("qk_rope_head_dim");
  m.mla_dims.v_head_dim = c.req_int("v_head_dim");
  // MLA has no KV-head sharing; kv_channels carries the value head width (o_proj is heads * v_head_dim).
  m.query_groups = m.heads;
  m.kv_channels = m.mla_dims.v_head_dim;
  m.bias = c.opt_bool("attention_bias", false);

  m.mtp_layers = c.opt_int("num_nextn_predict_layers", 0).value_or(0);
  if (!c.present("n_routed_experts")) c.fail("n_routed_experts", "missing (required; null means a dense model)");
  const auto experts = c.opt_int("n_routed_experts");
  if (!experts) return;
  Moe moe;
  moe.num_experts = *experts;
  moe.topk = c.req_int("num_experts_per_tok");
  check_topk(c, "num_experts_per_tok", moe.topk, moe.num_experts);
  moe.ffn = c.req_int("moe_intermediate_size");
  const int64_t n_shared = c.opt_int("n_shared_experts", 0).value_or(0);
  moe.shared_ffn = c.product(n_shared, moe.ffn, "n_shared_experts");
  const int64_t k = c.opt_int("first_k_dense_replace", 0).value_or(0);
  const int64_t f = c.opt_int("moe_layer_freq").value_or(1);
  moe.layer_freq = f;
  moe.first_k_dense = (k + f - 1) / f * f;
  // Group-limited routing (V2: n_group 8, topk_group 3; V3: 8, 4); 1 group = no limit.
  const int64_t groups = c.opt_int("n_group", 1).value_or(1);
  if (groups > 1) {
    moe.router_groups = groups;
    moe.router_group_topk = c.req_int("topk_group");
  }
  if (moe.first_k_dense >= m.num_layers) return;  // every layer dense
  m.moe = moe;
}

// What the config leaves to defaults, said per job key (issue 15 item 11: a user must see each of them).
void note_assumptions(const Config& c, Family fam, Model& m) {
  const char* ctx = fam == Family::Gpt2 ? "n_positions" : "max_position_embeddings";
  m.assumed["seq_length"] = std::to_string(m.seq_length) + " from " + ctx +
                            " (the longest context the model supports; set model.seq_length to the sequences you "
                            "train on)";
  if (fam != Family::Gpt2 && fam != Family::GptNeox && !c.get("num_key_value_heads")) {
    m.assumed["num_query_groups"] = std::to_string(m.query_groups) + ": num_key_value_heads absent, full multi-head "
                                    "attention (transformers' default)";
  }
  if (!c.get("tie_word_embeddings")) {
    m.assumed["tie_embeddings"] = std::string(m.tie ? "true" : "false") + ": tie_word_embeddings absent (transformers' "
                                  "default for this model type)";
  }
  if (fam != Family::Gpt2 && !c.get("hidden_act")) {
    m.assumed["activation"] = std::string(m.swiglu ? "swiglu" : "gelu") + ": hidden_act absent (transformers' default)";
  }
  read_sliding_window(c, fam, m);
}

Model read_model(const Config& c, Family fam) {
  Model m;
  switch (fam) {
    case Family::Gpt2: read_gpt2(c, m); break;
    case Family::GptNeox: read_gpt_neox(c, m); break;
    default: read_llama_style(c, m, fam == Family::DeepseekV2 || fam == Family::DeepseekV3); break;
  }
  note_assumptions(c, fam, m);
  switch (fam) {
    case Family::Llama:
    case Family::Mistral:
    case Family::Mixtral:
      // Megatron's add_bias_linear is one switch for all linears; transformers splits it into
      // attention_bias and mlp_bias. Either set is treated as biased (bias FLOPs are negligible).
      m.bias = c.opt_bool("attention_bias", false) || c.opt_bool("mlp_bias", false);
      break;
    case Family::Qwen2:
    case Family::Qwen2Moe:
      // Qwen2 has a bias on q/k/v only, with no config key; a QKV-only bias is not a schema option
      // and costs nothing measurable, so the model is treated as bias-free.
      m.bias = false;
      break;
    default: break;
  }
  if (fam == Family::Mixtral) read_mixtral_moe(c, m);
  if (fam == Family::Qwen2Moe) read_qwen2_moe(c, m);
  if (fam == Family::DeepseekV2 || fam == Family::DeepseekV3) read_deepseek(c, m);

  if (auto n = c.opt_string("_name_or_path"); n && !n->empty()) {
    if (n->size() > kMaxNameLength) c.fail("_name_or_path", "longer than " + std::to_string(kMaxNameLength) + " characters");
    m.name = *n;
  } else {
    m.name = model_type_of(fam);
  }
  return m;
}

YAML::Node to_node(const Model& m) {
  YAML::Node n;
  n["name"] = m.name;
  n["num_layers"] = m.num_layers;
  n["hidden_size"] = m.hidden;
  n["num_attention_heads"] = m.heads;
  n["num_query_groups"] = m.query_groups;
  n["kv_channels"] = m.kv_channels;
  n["ffn_hidden_size"] = m.ffn;
  n["activation"] = m.swiglu ? "swiglu" : "gelu";
  n["normalization"] = m.rmsnorm ? "rmsnorm" : "layernorm";
  n["add_bias_linear"] = m.bias;
  n["hidden_dropout"] = m.hidden_dropout;  // explicit: the loader's default follows the activation
  n["attention_dropout"] = m.attention_dropout;
  // Explicit, because the loader's default follows the activation and GPT-NeoX is GELU with RoPE.
  n["position_embedding"] = m.rope ? "rope" : "learned";
  n["vocab_size"] = m.vocab;
  n["seq_length"] = m.seq_length;  // the trained context; override with --set model.seq_length=...
  n["tie_embeddings"] = m.tie;
  if (m.mtp_layers > 0) n["mtp_layers"] = m.mtp_layers;
  // Travels with the model keys: a key the job writes beside hf_config removes its entry (job_loader.cpp).
  for (const auto& [k, text] : m.assumed) n[kHfAssumedKey][k] = text;
  YAML::Node att;
  if (m.mla) {
    att["type"] = "mla";
    att["q_lora_rank"] = m.mla_dims.q_lora_rank;
    att["kv_lora_rank"] = m.mla_dims.kv_lora_rank;
    att["qk_nope_head_dim"] = m.mla_dims.qk_nope;
    att["qk_rope_head_dim"] = m.mla_dims.qk_rope;
    att["v_head_dim"] = m.mla_dims.v_head_dim;
  } else {
    att["type"] = m.query_groups < m.heads ? "gqa" : "mha";
  }
  if (m.window > 0) {
    att["window_size"] = m.window;
    for (int x : m.window_layers) att["window_attn_skip_freq"].push_back(x);
  }
  n["attention"] = att;
  if (m.moe) {
    YAML::Node moe;
    moe["num_experts"] = m.moe->num_experts;
    moe["topk"] = m.moe->topk;
    moe["ffn_hidden_size"] = m.moe->ffn;
    moe["shared_expert_ffn_hidden_size"] = m.moe->shared_ffn;
    moe["layer_freq"] = m.moe->layer_freq;
    moe["first_k_dense"] = m.moe->first_k_dense;
    if (m.moe->router_groups > 0) {
      moe["router_num_groups"] = m.moe->router_groups;
      moe["router_group_topk"] = m.moe->router_group_topk;
    }
    moe["capacity_factor"] = YAML::Node(YAML::NodeType::Null);  // HF MoE models are dropless
    n["moe"] = moe;
  }
  return n;
}

}  // namespace

YAML::Node hf_config_to_model_node(const std::string& json_text, const std::string& source) {
  const json j = parse_strict_json(json_text, source);
  if (!j.is_object()) throw InputError(source + ": top level must be a JSON object, got " + type_name(j));
  const Config c(j, source);
  return to_node(read_model(c, detect_family(c)));
}

}  // namespace stepsim::spec
