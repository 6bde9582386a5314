#pragma once
// `stepsim memory` as a library call (the CLI and the Python API): every pipeline stage's memory from the job's
// workload, without running the engine, against the job's GPU in the shipped catalog.
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/api/job_input.hpp"

namespace stepsim::api {

struct MemoryOutput {
  nlohmann::json json;  // what `memory --json` writes
  std::string text;     // what `memory` prints
};

MemoryOutput memory(const JobInput& job);

}  // namespace stepsim::api
