// libFuzzer target for deepspeed_config_to_job_node and resolve_deepspeed_degrees: the input is the DeepSpeed config
// (JSON); the model is a fixed Hugging Face Llama config. InputError is the expected outcome for bad input; any other
// exception, a crash, a hang, or a produced job that breaks the invariants below is a bug.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <yaml-cpp/yaml.h>

#include "stepsim/input/deepspeed_config.hpp"
#include "stepsim/io/input_error.hpp"

#include "fuzz_support.hpp"

namespace {

using fuzz_support::in_range;
using fuzz_support::require;

constexpr const char* kLlama =
    R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
        "num_attention_heads": 8, "num_key_value_heads": 4, "num_hidden_layers": 2, "vocab_size": 1000,
        "max_position_embeddings": 512, "hidden_act": "silu", "tie_word_embeddings": false})";

void check_job(const YAML::Node& j) {
  const YAML::Node p = j["parallelism"], t = j["training"];
  require(in_range(p, "tensor", 1) == 1 && in_range(p, "pipeline", 1) == 1);
  const int64_t data = in_range(p, "data", 1);
  require(in_range(t, "global_batch_size", 1) % (in_range(t, "micro_batch_size", 1) * data) == 0);
  require(t["framework"].as<std::string>() == "deepspeed");
  require(in_range(t, "zero_stage", 0) == 3);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    YAML::Node j = stepsim::spec::deepspeed_config_to_job_node(text, "fuzz.json", kLlama, "config.json");
    j["cluster"]["num_gpus"] = 64;
    stepsim::spec::resolve_deepspeed_degrees(j, "fuzz.json");
    check_job(j);
    (void)YAML::Dump(j);
  } catch (const stepsim::InputError&) {
  }
  return 0;
}
