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
// The job as written against the fastest ranked plan (plan #1 unless ties reordered them): its objective over that
// plan's, minus 1 (0 without both), and the line saying so.
double baseline_gain(const PlanResult& r);
std::string baseline_line(const PlanResult& r);
// Which ranked plans the model cannot tell apart (plan_ties.hpp), e.g. "ties (plans within 4.9 % ...): #1-#7, ...".
std::string ties_line(const PlanResult& r);
nlohmann::json plan_json(const PlanResult& r, const ReportContext& c);

}  // namespace stepsim::plan
