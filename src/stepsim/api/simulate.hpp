#pragma once
// `stepsim simulate` as a library call (the CLI and the Python API): one training step of the job on every rank,
// its summary (the JSON contract of docs/ARCHITECTURE.md) and the outputs the command writes.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/api/job_input.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"

namespace stepsim::api {

struct SimulateOptions {
  JobInput job;
  std::string json_path, trace_path, trace_ranks, memory_csv, report_path;  // outputs; "" = none
  std::string dump_job_path;  // the job as read (api/dump_job.hpp); "" = none
  int rank = 0;                  // the rank of the breakdown and communication figures
  bool require_fit = false;      // check_fit throws when the job does not fit
  bool record_stages = false;    // record one rank per stage even without a trace or memory CSV (memory series)
  std::string workload_dir;      // trace-driven: the traced ranks' programs
  int step = -1;                 // with workload_dir: the ProfilerStep to replay (-1: the last)
  bool no_host_gaps = false;
  ProgressFn progress;           // the engine's, for a progress bar (empty: none)
};

// What a trace-driven run tells besides the summary: where its ranks came from and the step the trace measured.
struct TraceRunInfo {
  int traced = 0, world = 0;
  int64_t host_gap_ops = 0, measured_comm_ops = 0;
  std::optional<double> measured_step_s;
};

struct SimulateOutput {
  sim::Simulation sim;
  report::Summary summary;
  nlohmann::json json;  // what --json writes
  TraceRunInfo trace_info;
};

// Loads the job and simulates it; InputError for bad input.
SimulateOutput simulate(const SimulateOptions& o);
// Writes the summary JSON, the Chrome trace, the memory CSV and the HTML report the options ask for.
void write_outputs(const SimulateOptions& o, const SimulateOutput& out);
// With require_fit: InputError when the job does not fit the GPU memory.
void check_fit(const SimulateOptions& o, const SimulateOutput& out);

}  // namespace stepsim::api
