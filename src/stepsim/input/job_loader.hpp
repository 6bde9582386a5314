#pragma once
// Loading a job. Every source (YAML job file, Hugging Face config.json, Megatron-LM argument string)
// becomes one YAML node tree in the job-file schema first; `--set` overrides edit that tree; then one
// strict converter turns it into a JobSpec (unknown keys are errors) and validate() checks the rules. The GPU
// catalog a job is resolved against (its GPU's name, NVLink rate) is an argument (catalog::Catalog::gpus).
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "stepsim/io/input_file.hpp"   // kMaxInputFileBytes, read_text_file (moved to io/)
#include "stepsim/io/yaml_reader.hpp"  // parse_yaml (moved to io/)
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/job/job_spec.hpp"

namespace stepsim::spec {

// Applies "a.b.c=value" overrides (value parsed as a YAML scalar or flow collection); paths among them (a cluster
// file, an HF config, simulation.overlap_file / calibration_store) are relative to the working directory.
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides);
// job_from_node for a tree that `overrides` changed: an unknown key that an override wrote is reported against that
// `--set key=value`, not against the file whose section it landed in.
JobSpec job_from_node(const hw::GpuCatalog& gpus, const YAML::Node& root, const std::string& source,
                      const std::vector<std::string>& overrides);

// The model section from a Hugging Face config.json's text, with the keys of `model` (the job's model section, whose
// hf_config key is skipped) written over it: what resolve_includes does for `model: {hf_config: path, ...}`.
YAML::Node model_from_hf_config(const std::string& json_text, const std::string& source, const YAML::Node& model);

// Inlines `model: {hf_config: path, ...}` and `cluster: path` (paths relative to base_dir).
void resolve_includes(YAML::Node& root, const std::string& base_dir);

// The training keys framework `target` has no option for (refused under it): Megatron-Core's and Transformer Engine's
// under torchtitan and DeepSpeed, torchtitan's compile keys under the others.
std::vector<std::string> training_keys_framework_lacks(Framework target);
// Removes those keys from a job tree's training section, except the ones `kept` names (a value the user sets again
// stays, for the loader to refuse); returns the removed keys in that list's order. `plan --framework` and `whatif --to
// training.framework=F` re-aim a job this way.
std::vector<std::string> drop_training_keys_framework_lacks(YAML::Node root, Framework target,
                                                            const std::function<bool(const std::string&)>& kept);
// The framework `training.framework` names (megatron, torchtitan, deepspeed), or nothing.
std::optional<Framework> framework_named(std::string_view name);

// Strict conversion of a complete job tree; throws InputError naming the key and the rule.
JobSpec job_from_node(const hw::GpuCatalog& gpus, const YAML::Node& root, const std::string& source);

// Whole pipeline for a job file on disk.
JobSpec load_job_file(const hw::GpuCatalog& gpus, const std::string& path,
                      const std::vector<std::string>& overrides = {});
// The same up to the tree (includes resolved, overrides applied), for callers that edit it further (whatif).
// hf_config_path: the model section from that Hugging Face config.json, the file's model keys written over it
// (`--hf-config`), as `model: {hf_config: path}` in the file would.
YAML::Node load_job_tree(const std::string& path, const std::vector<std::string>& overrides = {},
                         const std::string& hf_config_path = "");

// For `simulate --megatron-args "..." --cluster C.yaml`: the job from the argument string, the cluster
// section from the file (a cluster YAML holds the keys of the job file's cluster section).
JobSpec load_megatron_job(const hw::GpuCatalog& gpus, const std::string& args, const std::string& cluster_path,
                          const std::vector<std::string>& overrides = {});
YAML::Node load_megatron_tree(const std::string& args, const std::string& cluster_path,
                              const std::vector<std::string>& overrides = {});

// Checks every cross-field rule (divisibility, products, the GPU's name in `gpus`) and fills derived fields
// (data degree, query groups, kv_channels, the GPU's catalog name). Throws InputError.
void validate(const hw::GpuCatalog& gpus, JobSpec& job);

// Why Megatron-Core (or the simulator) refuses training.overlap_moe_expert_parallel_comm for this job, as the rule
// validate() reports; nullptr when it allows it. Whether the key is set is not looked at: the planner asks before it
// validates a candidate (a refusal by validate costs an exception).
const char* ep_overlap_refusal(const JobSpec& job);

// A cluster alone (for `stepsim comm`): the file's cluster keys (or the defaults when `cluster_path` is empty),
// num_gpus and gpus_per_node from the caller (gpus_per_node 0: the file's own, else 8), then `cluster.*` overrides.
ClusterSpec load_cluster(const hw::GpuCatalog& gpus, const std::string& cluster_path, int num_gpus, int gpus_per_node,
                         const std::vector<std::string>& overrides);

}  // namespace stepsim::spec
