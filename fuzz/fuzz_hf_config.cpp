// libFuzzer target for hf_config_to_model_node. InputError is the expected outcome for bad input;
// any other exception, a crash, a hang, or a produced model section that breaks the invariants
// below is a bug.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <yaml-cpp/yaml.h>

#include "stepsim/input/hf_config.hpp"
#include "stepsim/io/input_error.hpp"

#include "fuzz_support.hpp"


namespace {

using fuzz_support::require;
using fuzz_support::in_range;

void check_model(const YAML::Node& m) {
  const int64_t layers = in_range(m, "num_layers", 1);
  in_range(m, "hidden_size", 1);
  const int64_t heads = in_range(m, "num_attention_heads", 1);
  const int64_t groups = in_range(m, "num_query_groups", 1);
  require(heads % groups == 0);
  in_range(m, "kv_channels", 1);
  in_range(m, "ffn_hidden_size", 1);
  in_range(m, "vocab_size", 1);
  in_range(m, "seq_length", 1);
  const std::string act = m["activation"].as<std::string>();
  require(act == "swiglu" || act == "gelu");
  const std::string type = m["attention"]["type"].as<std::string>();
  require(type == "mha" || type == "gqa" || type == "mla");
  if (const YAML::Node moe = m["moe"]) {
    const int64_t experts = in_range(moe, "num_experts", 1);
    require(in_range(moe, "topk", 1) <= experts);
    in_range(moe, "ffn_hidden_size", 1);
    in_range(moe, "shared_expert_ffn_hidden_size", 0);
    in_range(moe, "layer_freq", 1);
    require(in_range(moe, "first_k_dense", 0) < layers);
    require(moe["capacity_factor"].IsNull());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const YAML::Node m = stepsim::spec::hf_config_to_model_node(text, "fuzz.json");
    check_model(m);
    (void)YAML::Dump(m);  // the node must also serialise
  } catch (const stepsim::InputError&) {
  }
  return 0;
}
