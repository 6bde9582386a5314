#pragma once
// stepsim profile nccl: fuse NCCL debug logs with Nsight Systems SQLite exports (docs/PROFILER.md).
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {

Action add_profile(CLI::App& app);

}  // namespace stepsim::cli
