#pragma once
// Megatron-LM command-line arguments -> a job tree (model, parallelism, training sections) in the
// job-file schema, so the same strict converter and validation apply.
#include <string>

#include <yaml-cpp/yaml.h>

namespace stepsim::spec {

// Parses an argument string as pretrain_gpt.py receives it ("--num-layers 96 --hidden-size 12288 ...",
// shell-style quoting and backslash-newline continuations allowed). Arguments that do not change
// performance (paths, logging, seeds, ...) are accepted and ignored; an unknown argument that looks
// like it matters is an error. Throws InputError "megatron-args: --flag: rule".
YAML::Node megatron_args_to_job_node(const std::string& args);

}  // namespace stepsim::spec
