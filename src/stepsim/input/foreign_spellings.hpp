// Keys and values of a job written as another tool spells them (Hugging Face config.json, torchtitan's TOML,
// DeepSpeed's JSON, Megatron-LM's flags): refused by name with stepsim's own spelling, so that a user who writes
// `num_key_value_heads` or `bfloat16` learns the key at once instead of reading the whole key list.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

namespace stepsim::spec {

// Throws InputError "SOURCE: unknown key PATH (did you mean KEY? WHY)" for the first such key of `root`, or
// "SOURCE: key PATH: must be one of ..., got 'VALUE' (did you mean V?)" for such a value. `cluster_source` names the
// file the cluster section came from (the job's own unless the section was read from a cluster file).
void refuse_foreign_spellings(const YAML::Node& root, const std::string& source, const std::string& cluster_source);

}  // namespace stepsim::spec
