#pragma once
// stepsim slowdown train|eval: the learned overlap-slowdown model (docs/SLOWDOWN-MODEL.md).
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {

Action add_slowdown(CLI::App& app);

}  // namespace stepsim::cli
