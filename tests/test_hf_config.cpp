// Tests for hf_config_to_model_node: the published configs of ten models map to the expected model
// sections, and each class of bad input is refused with an InputError that names the key.
#include <fstream>
#include <set>
#include <utility>
#include <vector>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <yaml-cpp/yaml.h>

#include "stepsim/input/hf_config.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace {

using stepsim::InputError;
using stepsim::spec::hf_config_to_model_node;

std::string fixture_path(const std::string& name) {
#ifdef STEPSIM_SOURCE_DIR
  return std::string(STEPSIM_SOURCE_DIR) + "/tests/data/hf/" + name;
#else
  return "tests/data/hf/" + name;
#endif
}

YAML::Node load(const std::string& name) {
  std::ifstream in(fixture_path(name));
  EXPECT_TRUE(in.good()) << "cannot open " << fixture_path(name);
  std::stringstream ss;
  ss << in.rdbuf();
  return hf_config_to_model_node(ss.str(), name);
}

int64_t i64(const YAML::Node& n, const char* key) { return n[key].as<int64_t>(); }
std::string str(const YAML::Node& n, const char* key) { return n[key].as<std::string>(); }

// Expects an InputError whose message contains every fragment (source, key, rule).
void expect_error(const std::string& json, std::initializer_list<std::string> fragments) {
  try {
    hf_config_to_model_node(json, "cfg.json");
    ADD_FAILURE() << "no InputError for: " << json;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("cfg.json: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

// A minimal valid Llama config, to break one key at a time: `drop` removes a key, `extra` adds or
// replaces keys ("\"k\": v, ...").
std::string llama_json(const std::string& drop, const std::string& extra) {
  static const std::vector<std::pair<std::string, std::string>> kBase = {
      {"model_type", "\"llama\""},       {"hidden_size", "4096"}, {"intermediate_size", "11008"},
      {"num_hidden_layers", "32"},        {"num_attention_heads", "32"}, {"vocab_size", "32000"},
      {"max_position_embeddings", "4096"}};
  std::string s = "{";
  for (const auto& [k, v] : kBase) {
    if (k == drop || extra.find("\"" + k + "\":") != std::string::npos) continue;
    s += "\"" + k + "\": " + v + ", ";
  }
  s += extra.empty() ? "\"rms_norm_eps\": 1e-05" : extra;
  return s + "}";
}
std::string llama_with(const std::string& extra) { return llama_json("", extra); }
std::string llama_without(const std::string& key) { return llama_json(key, ""); }

TEST(HfConfig, Llama2_7B) {
  const YAML::Node m = load("llama-2-7b-hf.json");
  EXPECT_EQ(str(m, "name"), "meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(i64(m, "num_layers"), 32);
  EXPECT_EQ(i64(m, "hidden_size"), 4096);
  EXPECT_EQ(i64(m, "num_attention_heads"), 32);
  EXPECT_EQ(i64(m, "num_query_groups"), 32);
  EXPECT_EQ(i64(m, "kv_channels"), 128);
  EXPECT_EQ(i64(m, "ffn_hidden_size"), 11008);
  EXPECT_EQ(i64(m, "vocab_size"), 32000);
  EXPECT_EQ(i64(m, "seq_length"), 4096);
  EXPECT_EQ(str(m, "activation"), "swiglu");
  EXPECT_EQ(str(m, "normalization"), "rmsnorm");
  EXPECT_EQ(str(m, "position_embedding"), "rope");
  EXPECT_FALSE(m["add_bias_linear"].as<bool>());
  EXPECT_FALSE(m["tie_embeddings"].as<bool>());
  EXPECT_EQ(m["attention"]["type"].as<std::string>(), "mha");
  EXPECT_FALSE(m["moe"]);
}

TEST(HfConfig, Llama3_70B_IsGqa) {
  const YAML::Node m = load("meta-llama-3-70b.json");
  EXPECT_EQ(str(m, "name"), "llama");  // no _name_or_path in the published file
  EXPECT_EQ(i64(m, "num_layers"), 80);
  EXPECT_EQ(i64(m, "hidden_size"), 8192);
  EXPECT_EQ(i64(m, "num_attention_heads"), 64);
  EXPECT_EQ(i64(m, "num_query_groups"), 8);
  EXPECT_EQ(i64(m, "kv_channels"), 128);
  EXPECT_EQ(i64(m, "ffn_hidden_size"), 28672);
  EXPECT_EQ(i64(m, "vocab_size"), 128256);
  EXPECT_EQ(i64(m, "seq_length"), 8192);
  EXPECT_EQ(m["attention"]["type"].as<std::string>(), "gqa");
  EXPECT_FALSE(m["add_bias_linear"].as<bool>());
}

TEST(HfConfig, Mistral7B) {
  const YAML::Node m = load("mistral-7b-v0.1.json");
  EXPECT_EQ(str(m, "name"), "mistral");
  EXPECT_EQ(i64(m, "num_layers"), 32);
  EXPECT_EQ(i64(m, "num_query_groups"), 8);
  EXPECT_EQ(i64(m, "ffn_hidden_size"), 14336);
  EXPECT_EQ(i64(m, "seq_length"), 32768);
  EXPECT_EQ(str(m, "activation"), "swiglu");
  EXPECT_EQ(m["attention"]["type"].as<std::string>(), "gqa");
}

TEST(HfConfig, Mixtral8x7B) {
  const YAML::Node m = load("mixtral-8x7b-v0.1.json");
  EXPECT_EQ(i64(m, "num_layers"), 32);
  EXPECT_EQ(i64(m, "hidden_size"), 4096);
  EXPECT_EQ(i64(m, "num_query_groups"), 8);
  EXPECT_EQ(i64(m, "ffn_hidden_size"), 14336);
  ASSERT_TRUE(m["moe"]);
  const YAML::Node moe = m["moe"];
  EXPECT_EQ(i64(moe, "num_experts"), 8);
  EXPECT_EQ(i64(moe, "topk"), 2);
  EXPECT_EQ(i64(moe, "ffn_hidden_size"), 14336);
  EXPECT_EQ(i64(moe, "shared_expert_ffn_hidden_size"), 0);
  EXPECT_EQ(i64(moe, "layer_freq"), 1);
  EXPECT_EQ(i64(moe, "first_k_dense"), 0);
  EXPECT_TRUE(moe["capacity_factor"].IsNull());
}

TEST(HfConfig, Qwen2_7B) {
  const YAML::Node m = load("qwen2-7b.json");
  EXPECT_EQ(i64(m, "num_layers"), 28);
  EXPECT_EQ(i64(m, "hidden_size"), 3584);
  EXPECT_EQ(i64(m, "num_attention_heads"), 28);
  EXPECT_EQ(i64(m, "num_query_groups"), 4);
  EXPECT_EQ(i64(m, "kv_channels"), 128);
  EXPECT_EQ(i64(m, "ffn_hidden_size"), 18944);
  EXPECT_EQ(i64(m, "vocab_size"), 152064);
  EXPECT_EQ(i64(m, "seq_length"), 131072);
  EXPECT_FALSE(m["add_bias_linear"].as<bool>());  // QKV-only bias is not modelled
  EXPECT_FALSE(m["tie_embeddings"].as<bool>());
}

TEST(HfConfig, Qwen15MoeA27B) {
  const YAML::Node m = load("qwen1.5-moe-a2.7b.json");
  EXPECT_EQ(i64(m, "num_layers"), 24);
  EXPECT_EQ(i64(m, "hidden_size"), 2048);
  EXPECT_EQ(i64(m, "num_attention_heads"), 16);
  EXPECT_EQ(i64(m, "num_query_groups"), 16);
  EXPECT_EQ(i64(m, "ffn_hidden_size"), 5632);
  EXPECT_EQ(i64(m, "vocab_size"), 151936);
  EXPECT_EQ(i64(m, "seq_length"), 8192);
  EXPECT_EQ(m["attention"]["type"].as<std::string>(), "mha");
  const YAML::Node moe = m["moe"];
  ASSERT_TRUE(moe);
  EXPECT_EQ(i64(moe, "num_experts"), 60);
  EXPECT_EQ(i64(moe, "topk"), 4);
  EXPECT_EQ(i64(moe, "ffn_hidden_size"), 1408);
  EXPECT_EQ(i64(moe, "shared_expert_ffn_hidden_size"), 5632);
  EXPECT_EQ(i64(moe, "layer_freq"), 1);
  EXPECT_EQ(i64(moe, "first_k_dense"), 0);
}

TEST(HfConfig, Gpt2) {
  const YAML::Node m = load("gpt2.json");
  EXPECT_EQ(i64(m, "num_layers"), 12);
  EXPECT_EQ(i64(m, "hidden_size"), 768);
  EXPECT_EQ(i64(m, "num_attention_heads"), 12);
  EXPECT_EQ(i64(m, "kv_channels"), 64);
  EXPECT_EQ(i64(m, "ffn_hidden_size"), 3072);  // n_inner absent => 4 * n_embd
  EXPECT_EQ(i64(m, "vocab_size"), 50257);
  EXPECT_EQ(i64(m, "seq_length"), 1024);
  EXPECT_EQ(str(m, "activation"), "gelu");
  EXPECT_EQ(str(m, "normalization"), "layernorm");
  EXPECT_EQ(str(m, "position_embedding"), "learned");
  EXPECT_TRUE(m["add_bias_linear"].as<bool>());
  EXPECT_TRUE(m["tie_embeddings"].as<bool>());
  EXPECT_EQ(m["attention_dropout"].as<double>(), 0.1);  // attn_pdrop
}

// The attention dropout a config states is read (GPT-2's attn_pdrop, the Llama family's attention_dropout), and GPT-2
// without one gets GPT2Config's 0.1, named as assumed.
TEST(HfConfig, AttentionDropoutAsTheConfigStatesIt) {
  const std::string gpt2 = R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 8,
                               "vocab_size": 10)";
  EXPECT_EQ(hf_config_to_model_node(gpt2 + R"(, "attn_pdrop": 0.05})", "g.json")["attention_dropout"]
                .as<double>(),
            0.05);
  const YAML::Node unstated = hf_config_to_model_node(gpt2 + "}", "g.json");
  EXPECT_EQ(unstated["attention_dropout"].as<double>(), 0.1);
  EXPECT_TRUE(unstated["_hf_assumed"]["attention_dropout"]);
  const std::string llama = R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 10, "max_position_embeddings": 8,
      "attention_dropout": 0.2})";
  EXPECT_EQ(hf_config_to_model_node(llama, "l.json")["attention_dropout"].as<double>(), 0.2);
}

TEST(HfConfig, GptNeox20B) {
  const YAML::Node m = load("gpt-neox-20b.json");
  EXPECT_EQ(i64(m, "num_layers"), 44);
  EXPECT_EQ(i64(m, "hidden_size"), 6144);
  EXPECT_EQ(i64(m, "num_attention_heads"), 64);
  EXPECT_EQ(i64(m, "kv_channels"), 96);
  EXPECT_EQ(i64(m, "ffn_hidden_size"), 24576);
  EXPECT_EQ(i64(m, "vocab_size"), 50432);
  EXPECT_EQ(i64(m, "seq_length"), 2048);
  EXPECT_EQ(str(m, "activation"), "gelu");
  EXPECT_EQ(str(m, "normalization"), "layernorm");
  EXPECT_EQ(str(m, "position_embedding"), "rope");  // GELU, but rotary (rotary_pct 0.25)
  EXPECT_TRUE(m["add_bias_linear"].as<bool>());
  EXPECT_FALSE(m["tie_embeddings"].as<bool>());
}

TEST(HfConfig, DeepSeekV2Lite) {
  const YAML::Node m = load("deepseek-v2-lite.json");
  EXPECT_EQ(i64(m, "num_layers"), 27);
  EXPECT_EQ(i64(m, "hidden_size"), 2048);
  EXPECT_EQ(i64(m, "num_attention_heads"), 16);
  EXPECT_EQ(i64(m, "ffn_hidden_size"), 10944);
  EXPECT_EQ(i64(m, "vocab_size"), 102400);
  EXPECT_EQ(i64(m, "seq_length"), 163840);
  EXPECT_EQ(str(m, "activation"), "swiglu");
  EXPECT_EQ(str(m, "normalization"), "rmsnorm");
  const YAML::Node a = m["attention"];
  EXPECT_EQ(a["type"].as<std::string>(), "mla");
  EXPECT_EQ(i64(a, "q_lora_rank"), 0);  // null => queries not compressed
  EXPECT_EQ(i64(a, "kv_lora_rank"), 512);
  EXPECT_EQ(i64(a, "qk_nope_head_dim"), 128);
  EXPECT_EQ(i64(a, "qk_rope_head_dim"), 64);
  EXPECT_EQ(i64(a, "v_head_dim"), 128);
  const YAML::Node moe = m["moe"];
  ASSERT_TRUE(moe);
  EXPECT_EQ(i64(moe, "num_experts"), 64);
  EXPECT_EQ(i64(moe, "topk"), 6);
  EXPECT_EQ(i64(moe, "ffn_hidden_size"), 1408);
  EXPECT_EQ(i64(moe, "shared_expert_ffn_hidden_size"), 2816);  // 2 shared experts x 1408
  EXPECT_EQ(i64(moe, "first_k_dense"), 1);
  EXPECT_EQ(i64(moe, "layer_freq"), 1);
}

TEST(HfConfig, DeepSeekV3) {
  const YAML::Node m = load("deepseek-v3.json");
  EXPECT_EQ(i64(m, "num_layers"), 61);
  EXPECT_EQ(i64(m, "hidden_size"), 7168);
  EXPECT_EQ(i64(m, "num_attention_heads"), 128);
  EXPECT_EQ(i64(m, "num_query_groups"), 128);
  EXPECT_EQ(i64(m, "ffn_hidden_size"), 18432);
  EXPECT_EQ(i64(m, "vocab_size"), 129280);
  const YAML::Node a = m["attention"];
  EXPECT_EQ(a["type"].as<std::string>(), "mla");
  EXPECT_EQ(i64(a, "q_lora_rank"), 1536);
  EXPECT_EQ(i64(a, "kv_lora_rank"), 512);
  const YAML::Node moe = m["moe"];
  EXPECT_EQ(i64(moe, "num_experts"), 256);
  EXPECT_EQ(i64(moe, "topk"), 8);
  EXPECT_EQ(i64(moe, "ffn_hidden_size"), 2048);
  EXPECT_EQ(i64(moe, "shared_expert_ffn_hidden_size"), 2048);
  EXPECT_EQ(i64(moe, "first_k_dense"), 3);
  EXPECT_EQ(i64(moe, "layer_freq"), 1);
  EXPECT_TRUE(moe["capacity_factor"].IsNull());
  EXPECT_EQ(i64(m, "mtp_layers"), 1);  // num_nextn_predict_layers: modelled as in --mtp-num-layers
  EXPECT_EQ(i64(moe, "router_num_groups"), 8);  // n_group, topk_group: group-limited routing
  EXPECT_EQ(i64(moe, "router_group_topk"), 4);
  EXPECT_FALSE(load("deepseek-v2-lite.json")["moe"]["router_num_groups"]);  // n_group 1: no limit
}

TEST(HfConfig, EmitsOnlySchemaKeys) {
  static const std::set<std::string> kModel = {
      "name", "num_layers", "hidden_size", "num_attention_heads", "num_query_groups", "kv_channels",
      "ffn_hidden_size", "activation", "normalization", "add_bias_linear", "hidden_dropout", "attention_dropout",
      "position_embedding", "vocab_size", "seq_length",
      "tie_embeddings", "attention", "moe", "mtp_layers",
      "_hf_assumed"};  // what the config left to defaults (kHfAssumedKey), read by the loader, not a schema key
  static const std::set<std::string> kAttention = {"type", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                                   "qk_rope_head_dim", "v_head_dim", "window_size",
                                                   "window_attn_skip_freq"};
  static const std::set<std::string> kMoe = {"num_experts", "topk", "ffn_hidden_size", "shared_expert_ffn_hidden_size",
                                             "layer_freq", "first_k_dense", "capacity_factor", "router_num_groups",
                                             "router_group_topk"};
  for (const char* f : {"llama-2-7b-hf.json", "meta-llama-3-70b.json", "mistral-7b-v0.1.json", "mixtral-8x7b-v0.1.json",
                        "qwen2-7b.json", "qwen1.5-moe-a2.7b.json", "gpt2.json", "gpt-neox-20b.json",
                        "deepseek-v2-lite.json", "deepseek-v3.json"}) {
    const YAML::Node m = load(f);
    for (const auto& kv : m) EXPECT_TRUE(kModel.count(kv.first.as<std::string>())) << f << ": " << kv.first;
    for (const auto& kv : m["attention"]) EXPECT_TRUE(kAttention.count(kv.first.as<std::string>())) << f;
    if (m["moe"]) {
      for (const auto& kv : m["moe"]) EXPECT_TRUE(kMoe.count(kv.first.as<std::string>())) << f;
    }
  }
}

TEST(HfConfig, ArchitecturesListWhenNoModelType) {
  const YAML::Node m = hf_config_to_model_node(
      R"({"architectures": ["SomethingElse", "MistralForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
          "max_position_embeddings": 256})",
      "x.json");
  EXPECT_EQ(str(m, "name"), "mistral");
  EXPECT_EQ(i64(m, "num_query_groups"), 2);
  EXPECT_EQ(m["attention"]["type"].as<std::string>(), "gqa");
}

TEST(HfConfig, ExplicitHeadDimAndGpt2NInner) {
  EXPECT_EQ(i64(hf_config_to_model_node(llama_with(R"("head_dim": 96)"), "x"), "kv_channels"), 96);
  EXPECT_EQ(i64(hf_config_to_model_node(
                    R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_inner": 100,
                        "n_positions": 32, "vocab_size": 10})",
                    "x"),
                "ffn_hidden_size"),
            100);
  EXPECT_EQ(i64(hf_config_to_model_node(
                    R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_inner": null,
                        "n_positions": 32, "vocab_size": 10})",
                    "x"),
                "ffn_hidden_size"),
            256);
}

TEST(HfConfig, LlamaBiasKeysSetAddBiasLinear) {
  EXPECT_TRUE(hf_config_to_model_node(llama_with(R"("attention_bias": true)"), "x")["add_bias_linear"].as<bool>());
  EXPECT_TRUE(hf_config_to_model_node(llama_with(R"("mlp_bias": true)"), "x")["add_bias_linear"].as<bool>());
}

TEST(HfConfig, Qwen2MoeSparseStepAndLeadingDenseLayers) {
  const std::string base =
      R"("model_type": "qwen2_moe", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 12,
         "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 256, "num_experts": 8,
         "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64)";
  // step 2: MoE at layers 1, 3, 5, ... => first_k_dense 1, layer_freq 2
  YAML::Node moe = hf_config_to_model_node("{" + base + R"(, "decoder_sparse_step": 2})", "x")["moe"];
  EXPECT_EQ(i64(moe, "first_k_dense"), 1);
  EXPECT_EQ(i64(moe, "layer_freq"), 2);
  // step 1 with layers 0 and 1 dense => first_k_dense 2
  moe = hf_config_to_model_node("{" + base + R"(, "mlp_only_layers": [1, 0]})", "x")["moe"];
  EXPECT_EQ(i64(moe, "first_k_dense"), 2);
  EXPECT_EQ(i64(moe, "layer_freq"), 1);
  // a dense layer in the middle cannot be expressed
  expect_error("{" + base + R"(, "mlp_only_layers": [5]})", {"mlp_only_layers", "dense layers between"});
  // num_experts 0 => dense model
  EXPECT_FALSE(hf_config_to_model_node("{" + base.substr(0, base.find("\"num_experts\"")) +
                                           R"("num_experts": 0, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                                              "shared_expert_intermediate_size": 64})",
                                       "x")["moe"]);
}

// Issue 48 item 9: a key written twice in one object was read from its last copy, silently; it is refused like a
// duplicate key of a job file. The same name in two different objects is fine.
TEST(HfConfig, AKeyWrittenTwiceInOneObjectIsRefused) {
  expect_error(llama_with("\"rms_norm_eps\": 1e-05, \"rms_norm_eps\": 1e-06"), {"key rms_norm_eps appears twice"});
  const std::string base = llama_json("", "");
  expect_error(base.substr(0, base.size() - 1) + ", \"hidden_size\": 8192}", {"key hidden_size appears twice"});
  EXPECT_NO_THROW(hf_config_to_model_node(llama_with("\"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"llama3\"}, "
                                                     "\"text_config\": {\"factor\": 2}"),
                                          "cfg.json"));
}

TEST(HfConfig, DeepSeekLayerFreqAboveOne) {
  std::ifstream in(fixture_path("deepseek-v2-lite.json"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  s.replace(s.find("\"moe_layer_freq\": 1"), 19, "\"moe_layer_freq\": 2");
  s.replace(s.find("\"first_k_dense_replace\": 1"), 26, "\"first_k_dense_replace\": 3");
  // MoE iff i >= 3 and i % 2 == 0: layers 4, 6, ... => first_k_dense 4, layer_freq 2
  const YAML::Node moe = hf_config_to_model_node(s, "x")["moe"];
  EXPECT_EQ(i64(moe, "first_k_dense"), 4);
  EXPECT_EQ(i64(moe, "layer_freq"), 2);
}

// ---- bad input: each class is refused, naming the key ----

TEST(HfConfigErrors, MalformedJsonNamesByte) {
  expect_error(R"({"model_type": "llama",})", {"malformed JSON at byte"});
  expect_error("", {"malformed JSON at byte"});
  expect_error(R"({"a": 1e400})", {"malformed JSON"});
}

TEST(HfConfigErrors, TopLevelNotObject) { expect_error("[1, 2]", {"top level must be a JSON object"}); }

TEST(HfConfigErrors, TooLarge) {
  std::string big(16u * 1024 * 1024 + 1, ' ');
  expect_error(big, {"larger than 16 MiB"});
}

TEST(HfConfigErrors, DeepNesting) {
  expect_error(std::string(100000, '[') + std::string(100000, ']'), {"nested deeper than 64"});
  // brackets inside strings do not count
  EXPECT_NO_THROW(hf_config_to_model_node(llama_with("\"x\": \"" + std::string(1000, '[') + "\""), "x"));
}

TEST(HfConfigErrors, UnknownOrMissingModelType) {
  expect_error(R"({"model_type": "bert", "hidden_size": 8})", {"model_type", "unsupported 'bert'"});
  expect_error(R"({"hidden_size": 8})", {"model_type", "missing"});
  expect_error(R"({"architectures": ["BertModel"]})", {"architectures", "no supported architecture"});
  expect_error(R"({"architectures": "LlamaForCausalLM"})", {"architectures", "must be an array"});
  expect_error(R"({"architectures": [7]})", {"architectures[0]", "must be a string"});
  expect_error(R"({"model_type": 7})", {"model_type", "must be a string"});
}

TEST(HfConfigErrors, MissingRequiredKeys) {
  for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                          "max_position_embeddings"})
    expect_error(llama_without(key), {std::string(key) + ": missing"});
  expect_error(R"({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_positions": 8, "vocab_size": 10})",
               {"n_layer: missing"});
  expect_error(llama_with(R"("model_type": "mixtral", "num_experts_per_tok": 2)"), {"num_local_experts: missing"});
}

TEST(HfConfigErrors, WrongTypes) {
  expect_error(llama_with(R"("vocab_size": "32000")"), {"vocab_size", "must be an integer, got a string"});
  expect_error(llama_with(R"("vocab_size": 32000.5)"), {"vocab_size", "must be an integer"});
  expect_error(llama_with(R"("vocab_size": 32000.0)"), {"vocab_size", "must be an integer"});
  expect_error(llama_with(R"("vocab_size": null)"), {"vocab_size", "got null"});
  expect_error(llama_with(R"("vocab_size": [1])"), {"vocab_size", "got an array"});
  expect_error(llama_with(R"("tie_word_embeddings": "no")"), {"tie_word_embeddings", "true or false"});
  expect_error(llama_with(R"("hidden_act": 3)"), {"hidden_act", "must be a string"});
  expect_error(llama_with(R"("_name_or_path": {})"), {"_name_or_path", "must be a string"});
}

TEST(HfConfigErrors, NonPositiveAndHugeSizes) {
  expect_error(llama_with(R"("num_hidden_layers": 0)"), {"num_hidden_layers", "must be positive, got 0"});
  expect_error(llama_with(R"("hidden_size": -4096)"), {"hidden_size", "must be positive"});
  expect_error(llama_with(R"("vocab_size": 2147483648)"), {"vocab_size", "at most 2147483647"});
  expect_error(llama_with(R"("vocab_size": 18446744073709551615)"), {"vocab_size", "at most"});
  expect_error(llama_with(R"("vocab_size": -9223372036854775808)"), {"vocab_size", "must be positive"});
  expect_error(llama_with(R"("vocab_size": 1e30)"), {"vocab_size", "must be an integer"});
  expect_error(R"({"model_type": "gpt2", "n_embd": 2147483644, "n_layer": 2, "n_head": 4, "n_positions": 8,
                   "vocab_size": 10})",
               {"n_embd", "derived size exceeds"});
}

TEST(HfConfigErrors, InconsistentShapes) {
  expect_error(llama_with(R"("num_key_value_heads": 5)"), {"num_key_value_heads", "must divide num_attention_heads"});
  expect_error(llama_with(R"("num_key_value_heads": 64)"), {"num_key_value_heads", "must divide"});
  expect_error(llama_with(R"("num_attention_heads": 30)"), {"hidden_size", "not divisible by num_attention_heads"});
  expect_error(llama_with(R"("hidden_act": "gelu")"), {"hidden_act", "'gelu' is not supported"});
  expect_error(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 5, "n_positions": 8, "vocab_size": 10})",
               {"n_embd", "not divisible by n_head"});
  expect_error(llama_with(R"("model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 4)"),
               {"num_experts_per_tok", "must not exceed"});
}

TEST(HfConfigErrors, DeepSeekRequiredMlaAndMoeKeys) {
  std::ifstream in(fixture_path("deepseek-v3.json"));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string v3 = ss.str();
  auto without = [&](const std::string& line) {
    std::string s = v3;
    s.erase(s.find(line), line.size());
    return s;
  };
  expect_error(without("\"q_lora_rank\": 1536,"), {"q_lora_rank", "missing"});
  expect_error(without("\"kv_lora_rank\": 512,"), {"kv_lora_rank", "missing"});
  expect_error(without("\"n_routed_experts\": 256,"), {"n_routed_experts", "missing"});
  expect_error(without("\"moe_intermediate_size\": 2048,"), {"moe_intermediate_size", "missing"});
}

TEST(HfConfigErrors, MessagesStayOnOneLine) {
  expect_error("{\"model_type\": \"x\\ny\\u0001\"}", {"model_type", "unsupported 'x?y?'"});
  expect_error("{\"model_type\": \"llama\"\n\n,,}", {"malformed JSON at byte"});
}

TEST(HfConfig, EveryDefaultedValueIsAnAssumptionAndAJobThatDoesNotFitSaysSoFirst) {
  // Issue 15 item 11: Mistral-7B's config without a seq_length gave 32,768 tokens silently, its sliding window was
  // ignored silently, and the out-of-memory run printed a step time with exit 0 and OOM at the end of one row.
  namespace test = stepsim::test;
  namespace spec = stepsim::spec;
  const std::string dir = test::temp_dir() + "hf11/";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(test::source_dir() + "/tests/data/hf/mistral-7b-v0.1.json", dir + "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string base = "parallelism: {tensor: 1}\ntraining: {global_batch_size: 8, distributed_optimizer: true}\n"
                           "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\n";
  std::ofstream(dir + "job.yaml") << "model: {hf_config: config.json}\n" << base;
  std::ofstream(dir + "job4k.yaml") << "model: {hf_config: config.json, seq_length: 4096}\n" << base;
  const spec::JobSpec j = spec::load_job_file(stepsim::catalog::shipped().gpus, dir + "job.yaml");
  ASSERT_EQ(j.model.hf_assumptions.size(), 1u);
  EXPECT_EQ(j.model.hf_assumptions[0].rfind("model.seq_length = 32768 from max_position_embeddings", 0), 0u);
  // Its sliding window (4096 keys, the query included) is modelled on every layer: 4095 before the query.
  EXPECT_EQ(j.model.window_size, 4095);
  EXPECT_TRUE(j.model.window_layers.empty());
  // Written beside hf_config, seq_length is no assumption any more.
  const spec::JobSpec k = spec::load_job_file(stepsim::catalog::shipped().gpus, dir + "job4k.yaml");
  EXPECT_TRUE(k.model.hf_assumptions.empty());
  EXPECT_EQ(k.model.window_size, 4095);
  // GPT-2's config.json leaves n_inner null: the 4h default is said, as every other default is.
  const YAML::Node gpt2 = load("gpt2.json");
  ASSERT_TRUE(gpt2["_hf_assumed"]["ffn_hidden_size"].IsDefined());
  EXPECT_EQ(gpt2["_hf_assumed"]["ffn_hidden_size"].as<std::string>(), "3072 = 4 x n_embd: n_inner absent (GPT2MLP's default)");
  // Llama-2's config has every key: nothing assumed but the context length.
  const YAML::Node llama = load("llama-2-7b-hf.json");
  EXPECT_EQ(llama["_hf_assumed"].size(), 1u);
  EXPECT_TRUE(llama["_hf_assumed"]["seq_length"].IsDefined());
  // The 32K job does not fit an 80 GiB H100: said before the step time, in the JSON, and an error with --require-fit.
  const auto r = test::run_cli("simulate " + dir + "job.yaml --json " + dir + "o.json");
  ASSERT_EQ(r.code, 0) << r.output;
  const size_t verdict = r.output.find("DOES NOT FIT: peak ");
  ASSERT_NE(verdict, std::string::npos) << r.output;
  EXPECT_LT(verdict, r.output.find("step time")) << r.output;
  EXPECT_NE(r.output.find("assumed (Hugging Face config): model.seq_length = 32768"), std::string::npos) << r.output;
  const auto out = nlohmann::json::parse(test::read_file(dir + "o.json"));
  EXPECT_FALSE(out["fits"].get<bool>());
  EXPECT_EQ(out["assumptions"].size(), 1u);
  const auto strict = test::run_cli("simulate " + dir + "job.yaml --quiet --require-fit");
  EXPECT_EQ(strict.code, 2) << strict.output;
  EXPECT_NE(strict.output.find("does not fit: peak "), std::string::npos) << strict.output;
  // At 4K tokens it fits: exit 0 with --require-fit, no verdict line.
  const auto fits = test::run_cli("simulate " + dir + "job4k.yaml --require-fit");
  EXPECT_EQ(fits.code, 0) << fits.output;
  EXPECT_EQ(fits.output.find("DOES NOT FIT"), std::string::npos) << fits.output;
}

}  // namespace
