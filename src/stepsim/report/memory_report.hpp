#pragma once
// `stepsim memory`: analytic per-rank memory of every pipeline stage (ranks of a stage are identical):
// static memory by component and the schedule-aware activation peak, against the GPU's capacity.
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/workload/program.hpp"

namespace stepsim::report {

nlohmann::json memory_json(const workload::Workload& w);
std::string memory_text(const workload::Workload& w);

}  // namespace stepsim::report
