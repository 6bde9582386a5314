#pragma once
#include "stepsim/cli/commands.hpp"
#include "stepsim/spec/job_spec.hpp"

namespace stepsim::cli {

// Loads the job from a file or from Megatron arguments; InputError for a missing or contradictory choice.
spec::JobSpec load_job(const JobOptions& o);

}  // namespace stepsim::cli
