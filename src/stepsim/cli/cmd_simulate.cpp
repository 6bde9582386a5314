// stepsim simulate: one training step of the job, every rank simulated; summary on stdout, optional
// summary JSON and Chrome trace.
#include <iostream>
#include <memory>

#include "stepsim/cli/commands.hpp"
#include "stepsim/cli/load_job.hpp"
#include "stepsim/report/chrome_trace.hpp"
#include "stepsim/report/memory_series.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/sim/simulation.hpp"
#include "stepsim/spec/input_error.hpp"
#include "stepsim/spec/rank_list.hpp"

namespace stepsim::cli {

namespace {

struct SimulateOptions {
  JobOptions job;
  std::string json_path, trace_path, trace_ranks, memory_csv;
  int rank = 0;
  bool quiet = false;
};

int run_simulate(const SimulateOptions& o) {
  spec::JobSpec job = load_job(o.job);
  const int world = job.cluster.num_gpus;
  if (o.rank < 0 || o.rank >= world) {
    throw InputError("--rank " + std::to_string(o.rank) + ": must be in 0.." + std::to_string(world - 1));
  }
  std::vector<int> record{o.rank};
  if (!o.trace_path.empty() || !o.memory_csv.empty()) {
    if (!o.trace_ranks.empty()) {
      for (int r : spec::parse_rank_list(o.trace_ranks, world, "--trace-ranks")) record.push_back(r);
    } else {
      // Default: one rank per pipeline stage (tp = cp = dp = 0), enough to see the schedule.
      const int stride = job.parallelism.tensor * job.parallelism.context * job.parallelism.data;
      for (int st = 0; st < job.parallelism.pipeline; ++st) record.push_back(st * stride);
    }
  } else if (!o.trace_ranks.empty()) {
    throw InputError("--trace-ranks needs --trace OUT.trace.json or --memory-csv OUT.csv");
  }
  const sim::Simulation s = sim::run_simulation(job, record);
  const report::Summary sum = report::summarize(s, o.rank);
  if (!o.quiet) std::cout << report::to_text(sum, s.workload.job);
  if (!o.json_path.empty()) {
    write_output_file(o.json_path, report::to_json(sum, s.workload.job).dump(2) + "\n", "summary JSON");
  }
  if (!o.trace_path.empty()) {
    report::write_chrome_trace_file(o.trace_path, s);
    if (!o.quiet) std::cout << "  trace: " << o.trace_path << " (open in ui.perfetto.dev)\n";
  }
  if (!o.memory_csv.empty()) report::write_memory_csv_file(o.memory_csv, s);
  return 0;
}

}  // namespace

Action add_simulate(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "simulate one training step on every rank");
  add_job_options(*cmd, o->job);
  cmd->add_option("--json", o->json_path, "write the summary JSON here");
  cmd->add_option("--trace", o->trace_path, "write a Chrome trace (Perfetto) here");
  cmd->add_option("--trace-ranks", o->trace_ranks, "ranks in the trace, e.g. 0-7,64 (default: one per stage)");
  cmd->add_option("--memory-csv", o->memory_csv, "write memory over time of the traced ranks (CSV) here");
  cmd->add_option("--rank", o->rank, "rank for the breakdown and communication bytes (default 0)");
  cmd->add_flag("--quiet", o->quiet, "print nothing on success");
  return [cmd, o]() { return cmd->parsed() ? run_simulate(*o) : -1; };
}

}  // namespace stepsim::cli
