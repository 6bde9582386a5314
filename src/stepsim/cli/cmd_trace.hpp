#pragma once
// stepsim trace import: PyTorch profiler (Kineto) and execution traces to per-rank programs (docs/TRACES.md).
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {

Action add_trace(CLI::App& app);

}  // namespace stepsim::cli
