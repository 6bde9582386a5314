#pragma once
// Job loading lives in the library (api/job_input.hpp); these names keep the commands' calls as they were.
#include "stepsim/api/job_input.hpp"
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {

using api::JobTree;
using api::load_job;
using api::load_job_tree;

}  // namespace stepsim::cli
