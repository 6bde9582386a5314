#pragma once
// `stepsim plan` as a library call (the CLI's cmd_plan.cpp and the Python API): the ranked plans of a job for a GPU
// count and global batch, or the (TP, PP) memory-feasibility map. The CLI passes its MPI distribution; the Python API
// runs in one process. docs/PLANNER.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/api/job_input.hpp"
#include "stepsim/plan/memory_map.hpp"
#include "stepsim/plan/plan_report.hpp"
#include "stepsim/plan/planner.hpp"

namespace stepsim::api {

struct PlanOptions {
  JobInput job;
  int gpus = 0, top = 10, simulate = 2, threads = 0;  // gpus 0: the job's; threads 0: all cores
  int64_t global_batch = 0;                           // 0: the job's
  std::string objective = "step";                     // step | e2e
  std::optional<int64_t> steps;                       // e2e options: given or not
  std::optional<double> tokens;                       // e2e: a token budget instead of steps
  std::optional<double> failure_rate, storage_GBps, init_time_s;
  double price = 0;
  bool keep_layout = false;
  std::string fp8_recipes;  // fp8 jobs: recipes to search ("delayed,current", "all"); "": the job's own
  double memory_margin = plan::kDefaultMemoryMargin;
  double tie_tolerance = plan::kDefaultTieTolerance;
  // The framework whose plans are searched ("": the job's training.framework) and the user's constraints on the
  // space: "KEY=VALUE" (fix), "KEY=V1,V2" (allow), "KEY=V1,V2" or a switch "KEY" (exclude); docs/PLANNER.md.
  std::string framework;
  std::vector<std::string> fix, allow, exclude;
  // TP at most this within an NVLink domain (0: the domain's size); the job file's plan section may give it too.
  int max_tp_per_nvlink_domain = 0;
  ProgressFn progress;  // empty: none
};

struct PlanOutput {
  plan::PlanResult result;
  plan::ReportContext context;
  nlohmann::json json;  // what --json writes
};

// How the candidates are split over processes (the CLI fills it under MPI); the default is one process.
using Distribution = plan::Distribution;

// The job the options name, with --framework applied (as `training.framework=` after the job's other overrides).
JobInput plan_job_input(const PlanOptions& o);

// InputError for bad options or a bad job. Under MPI every process gets the same output.
PlanOutput plan(const PlanOptions& o, const Distribution& dist = {});
// The ranked plans as `stepsim plan` prints them.
std::string plan_text(const PlanOutput& out);

// `plan --memory-map`: the map and its CSV (what --csv writes).
struct MemoryMapOutput {
  plan::MemoryMap map;
  std::string csv;
  std::string model, gpu;  // for the header: the job's model name and GPU
  int gpus = 0;            // the GPU count mapped
};
MemoryMapOutput memory_map(const JobInput& job, int gpus, int64_t global_batch);
// The map as `stepsim plan --memory-map` prints it, under a line naming the model, GPU count and GPU.
std::string memory_map_text(const MemoryMapOutput& m);

// `plan --report OUT.html`: the ranked plans and the (TP, PP) memory-feasibility map of the same job, GPUs and batch.
std::string plan_report_html(const PlanOptions& o, const PlanOutput& out);

}  // namespace stepsim::api
