#pragma once
#include <string>

#include <yaml-cpp/yaml.h>

#include "stepsim/cli/commands.hpp"
#include "stepsim/spec/job_spec.hpp"

namespace stepsim::cli {

// Loads the job from a file or from Megatron arguments; InputError for a missing or contradictory choice.
spec::JobSpec load_job(const JobOptions& o);

// The job's tree before conversion (for commands that edit it) and the name its messages use.
struct JobTree {
  YAML::Node root;
  std::string source;
};
JobTree load_job_tree(const JobOptions& o);

}  // namespace stepsim::cli
