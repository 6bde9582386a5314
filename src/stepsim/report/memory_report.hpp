#pragma once
// `stepsim memory`: analytic per-rank memory of every pipeline stage (ranks of a stage are identical):
// static memory by component and the schedule-aware activation peak, against the GPU's capacity.
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::report {

// Each stage's peak against `gpu`'s memory (the job's GPU in the catalog).
nlohmann::json memory_json(const workload::Workload& w, const hw::GpuSpec& gpu);
std::string memory_text(const workload::Workload& w, const hw::GpuSpec& gpu);

}  // namespace stepsim::report
