#pragma once
// Where a job comes from, for every job-taking command of the CLI and of the Python API: a job file, a Megatron-LM
// argument string, a torchtitan TOML config or a DeepSpeed JSON config (with the model's Hugging Face config) with a
// cluster, or (library callers) the job tree as YAML/JSON text, optionally with a Hugging Face
// config.json's text for its model. All of them become one tree in the job-file schema, then `overrides` (the CLI's
// --set) edit it, then the strict converter of spec/ turns it into a JobSpec (docs/ARCHITECTURE.md, data flow).
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::api {

struct JobInput {
  std::string job_path;       // a job YAML file
  std::string megatron_args;  // a Megatron-LM argument string (needs a cluster: cluster_path or cluster_text)
  std::string cluster_path;   // cluster YAML, for megatron_args and torchtitan_config
  std::string torchtitan_config;  // a torchtitan job config (TOML) file (needs a cluster, as megatron_args)
  std::string deepspeed_config;   // a DeepSpeed config (JSON) file (needs hf_config_path and a cluster)
  std::string hf_config_path;     // the Hugging Face config.json of the model a DeepSpeed config trains
  std::vector<std::string> overrides;  // "a.b.c=value", applied to the tree like --set

  // Library callers (the Python API) besides the CLI's three: the job tree as YAML or JSON text in the job-file
  // schema (paths in it relative to the working directory), a cluster section as text instead of cluster_path, a
  // Hugging Face config.json's text for the model (keys of the tree's model section written over it, as beside
  // model.hf_config), and the name messages give the text.
  std::string job_text;
  std::string cluster_text;
  std::string hf_config_text;
  std::string text_source = "job";
};

// The job's tree before conversion (for commands that edit it) and the name its messages use.
struct JobTree {
  YAML::Node root;
  std::string source;
};

// InputError for a missing or contradictory choice, and for every bad key of the job.
JobTree load_job_tree(const JobInput& in);
spec::JobSpec load_job(const JobInput& in);

// Whether `in` names a job at all (commands where the job is optional, e.g. reliability).
bool has_job(const JobInput& in);

}  // namespace stepsim::api
