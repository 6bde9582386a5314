#pragma once
// Outputs of `stepsim plan`: the ranked table with the notes (text) and the `plans` JSON (docs/PLANNER.md).
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/plan/planner.hpp"

namespace stepsim::plan {

struct ReportContext {
  std::string model;
  std::string gpu;
  int gpus = 0;
  int64_t global_batch = 0;
  PlannerOptions options;
};

std::string plan_text(const PlanResult& r, const ReportContext& c);
nlohmann::json plan_json(const PlanResult& r, const ReportContext& c);

}  // namespace stepsim::plan
