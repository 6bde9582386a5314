#pragma once
// A torchtitan job config (TOML, as `torchtitan/train.py --job.config_file` reads it; keys of torchtitan at 9dec370,
// December 2024) -> a job tree (model, parallelism, training sections) in the job-file schema, so the same strict
// converter and validation apply. docs/USAGE.md ("torchtitan config") lists every key and what becomes of it.
#include <string>

#include <yaml-cpp/yaml.h>

namespace stepsim::spec {

// Parses the TOML text. Keys that change the step's time or memory are turned into job keys or refused by name;
// keys that do not (job, metrics, profiling, checkpoint and comm sections, paths, learning rate, ...) are accepted
// and have no effect. The data-parallel degree -1 (torchtitan's "the rest of the GPUs") and the global batch are
// left for resolve_torchtitan_degrees once the cluster is known. Throws InputError "<source>: <key>: <rule>".
YAML::Node torchtitan_config_to_job_node(const std::string& toml_text, const std::string& source);

// Completes a tree made by torchtitan_config_to_job_node whose cluster section is resolved: parallelism.data from
// cluster.num_gpus where the config said -1, and training.global_batch_size (the local batch times the data-parallel
// degree) unless the tree already has one. InputError when the GPUs do not divide into the given degrees.
void resolve_torchtitan_degrees(YAML::Node& root, const std::string& source);

// Training-node key under which the converter's notes travel (what a key became where it is not a plain mapping);
// the loader turns them into TrainingSpec::input_notes. Not a user key (leading underscore).
inline constexpr const char* kInputNotesKey = "_input_notes";

}  // namespace stepsim::spec
