#pragma once
// The job as written, beside the plans the search ranks (issue 46 item 3): its own layout on the planned GPUs and
// global batch, timed the way the best plans are, so a plan's gain is read against what the user would run.
#include <optional>
#include <string>

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/plan/planner.hpp"
#include "stepsim/report/summary.hpp"

namespace stepsim::plan {

// A plan's numbers from the engine's summary of its step (rank 0).
void take_engine_timing(RankedPlan& rp, const report::Summary& sum);

// The plan a validated job describes (its data degree as written).
Plan plan_of_job(const spec::JobSpec& job);

struct Baseline {
  std::optional<RankedPlan> plan;  // absent when the job's layout does not run on these GPUs and batch
  std::string note;                // why it is absent, or how it was timed
};

// `engine`: time it with the engine (as the --simulate best plans are), else with the analytic path.
Baseline time_job_as_written(const catalog::Catalog& cat, const spec::JobSpec& base, int gpus, int64_t global_batch,
                             bool engine, const cost::ComputeModel& compute, const cost::CollectiveModel& comm);

}  // namespace stepsim::plan
