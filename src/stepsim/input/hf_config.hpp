#pragma once
// Hugging Face config.json -> the `model:` section of a job (as a YAML node in the job-file schema).
#include <string>

#include <yaml-cpp/yaml.h>

namespace stepsim::spec {

// Parses config.json text. Supports the model_type / architectures of Llama, Mistral, Mixtral, Qwen2,
// Qwen2-MoE, GPT-2, GPT-NeoX, DeepSeek-V2/V3 (MLA, shared experts, first_k_dense_replace).
// Throws InputError "<source>: <key>: <rule>" for malformed JSON, missing or invalid keys, unknown type.
YAML::Node hf_config_to_model_node(const std::string& json_text, const std::string& source);

// Model-node key under which the config's assumptions travel (job key -> what was assumed); the loader turns them
// into ModelSpec::hf_assumptions. Not a user key (leading underscore).
inline constexpr const char* kHfAssumedKey = "_hf_assumed";

}  // namespace stepsim::spec
