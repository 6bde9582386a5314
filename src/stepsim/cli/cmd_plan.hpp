#pragma once
// stepsim plan: search parallel plans for a job on a GPU count (docs/PLANNER.md).
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {

Action add_plan(CLI::App& app);

}  // namespace stepsim::cli
