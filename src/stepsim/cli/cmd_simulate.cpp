// stepsim simulate: one training step of the job, every rank simulated; summary on stdout, optional
// summary JSON and Chrome trace.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <memory>

#include "stepsim/cli/commands.hpp"
#include "stepsim/cli/load_job.hpp"
#include "stepsim/report/chrome_trace.hpp"
#include "stepsim/report/memory_series.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/simulation.hpp"
#include "stepsim/spec/input_error.hpp"
#include "stepsim/spec/rank_list.hpp"
#include "stepsim/trace/trace_workload.hpp"
#include "stepsim/trace/workload_dir.hpp"

namespace stepsim::cli {

namespace {

struct SimulateOptions {
  JobOptions job;
  std::string json_path, trace_path, trace_ranks, memory_csv;
  int rank = 0;
  bool quiet = false;
  bool require_fit = false;
  std::string workload_dir;  // trace-driven: the traced ranks' programs
  int step = -1;
  bool no_host_gaps = false;
};

// What the user should know about a trace-driven run besides the summary: where its ranks came from and how the
// prediction compares with the step the trace measured.
struct TraceRunInfo {
  int traced = 0, world = 0;
  int64_t host_gap_ops = 0, measured_comm_ops = 0;
  std::optional<double> measured_step_s;
};

sim::Simulation run_traced(const SimulateOptions& o, const spec::JobSpec& job, const std::vector<int>& record,
                           TraceRunInfo& info) {
  trace::WorkloadReadOptions ro;
  if (o.step >= 0) ro.step = o.step;
  std::vector<trace::TracedRank> ranks = trace::read_workload_dir(o.workload_dir, ro);
  // The reported rank's measured step; a rank that reuses a peer's trace compares with the first measured one.
  for (const auto& r : ranks) {
    if (r.rank == o.rank && r.measured_step_s) info.measured_step_s = r.measured_step_s;
  }
  for (const auto& r : ranks) {
    if (!info.measured_step_s && r.measured_step_s) info.measured_step_s = r.measured_step_s;
  }
  trace::TraceWorkload tw = trace::build_trace_workload(job, std::move(ranks), {!o.no_host_gaps});
  info.traced = tw.traced;
  info.world = job.cluster.num_gpus;
  info.host_gap_ops = tw.host_gap_ops;
  info.measured_comm_ops = tw.measured_comm_ops;
  try {
    return sim::run_workload(std::move(tw.workload), record);
  } catch (const sim::DeadlockError& e) {
    // The matching checks passed, but the order of the traced calls cannot complete (both peers receiving first).
    throw InputError(o.workload_dir + ": the traced communication cannot complete in this order (" + e.what() + ")");
  }
}

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
  if (o.workload_dir.empty() && (o.step >= 0 || o.no_host_gaps)) {
    throw InputError(std::string(o.step >= 0 ? "--step" : "--no-host-gaps") + " needs --workload DIR");
  }
  TraceRunInfo info;
  const sim::Simulation s = o.workload_dir.empty() ? sim::run_simulation(job, record) : run_traced(o, job, record, info);
  report::Summary sum = report::summarize(s, o.rank);
  if (!o.workload_dir.empty() &&
      std::all_of(sum.per_stage.begin(), sum.per_stage.end(), [](const auto& m) { return m.peak_bytes == 0; })) {
    sum.notes.push_back("memory: the traced programs carry no allocations (Kineto [memory] events are not read and "
                        "trace extrapolate models none), so the memory table reads 0 B; it is not a prediction");
  }
  nlohmann::json j = report::to_json(sum, s.workload.job);
  if (!o.workload_dir.empty()) {
    const double sim_s = sum.step_time_s;
    nlohmann::json wj = {{"dir", o.workload_dir}, {"traced_ranks", info.traced},
                         {"reused_ranks", info.world - info.traced}, {"host_gap_ops", info.host_gap_ops},
                         {"measured_comm_ops", info.measured_comm_ops},
                         {"host_gaps", !o.no_host_gaps}, {"measured_step_s", nullptr}, {"error", nullptr}};
    if (info.measured_step_s && *info.measured_step_s > 0) {
      wj["measured_step_s"] = *info.measured_step_s;
      wj["error"] = (sim_s - *info.measured_step_s) / *info.measured_step_s;
    }
    j["workload"] = wj;
  }
  if (!o.quiet) {
    std::cout << report::to_text(sum, s.workload.job);
    if (!o.workload_dir.empty()) {
      std::cout << "  workload: " << o.workload_dir << ": " << info.traced << " traced rank(s), "
                << info.world - info.traced << " reuse a data-parallel peer's trace; " << info.host_gap_ops
                << " host-gap op(s)" << (o.no_host_gaps ? " (dropped)" : "") << "\n";
      if (info.measured_comm_ops > 0) {
        std::cout << "  " << info.measured_comm_ops
                  << " collective(s) without a message size in the trace replay their measured time\n";
      }
      if (info.measured_step_s && *info.measured_step_s > 0) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "  measured step (rank %d, from the trace): %s; simulated %s (%+.1f%%)\n", o.rank,
                      report::format_seconds(*info.measured_step_s).c_str(), report::format_seconds(sum.step_time_s).c_str(),
                      100.0 * (sum.step_time_s - *info.measured_step_s) / *info.measured_step_s);
        std::cout << buf;
      }
    }
  }
  if (!o.json_path.empty()) write_output_file(o.json_path, j.dump(2) + "\n", "summary JSON");
  if (!o.trace_path.empty()) {
    report::write_chrome_trace_file(o.trace_path, s);
    if (!o.quiet) std::cout << "  trace: " << o.trace_path << " (open in ui.perfetto.dev)\n";
  }
  if (!o.memory_csv.empty()) report::write_memory_csv_file(o.memory_csv, s);
  // Outputs are written either way (the user asked what it would take); --require-fit makes the verdict the exit code.
  if (o.require_fit && sum.oom) {
    throw InputError(s.workload.job.source + ": does not fit: peak " +
                     report::format_bytes(static_cast<double>(sum.peak_bytes_max)) + " of " +
                     report::format_bytes(static_cast<double>(sum.capacity_bytes)) + " per GPU (--require-fit)");
  }
  return 0;
}

}  // namespace

Action add_simulate(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "simulate one training step on every rank");
  add_job_options(*cmd, o->job);
  cmd->add_option("--json", o->json_path, "write the summary JSON here")->check(output_file());
  cmd->add_option("--trace", o->trace_path, "write a Chrome trace (Perfetto) here")->check(output_file());
  cmd->add_option("--trace-ranks", o->trace_ranks, "ranks in the trace, e.g. 0-7,64 (default: one per stage)");
  cmd->add_option("--memory-csv", o->memory_csv, "write memory over time of the traced ranks (CSV) here")->check(output_file());
  cmd->add_option("--rank", o->rank, "rank for the breakdown and communication bytes (default 0)");
  cmd->add_flag("--quiet", o->quiet, "print nothing on success");
  cmd->add_flag("--require-fit", o->require_fit,
                "exit 2 when the job does not fit the GPU memory (by default it is reported first and the exit is 0)");
  cmd->add_option("--workload", o->workload_dir,
                  "trace-driven: replay the traced ranks in DIR (stepsim trace import/extrapolate, python3 -m stepsim.trace)");
  cmd->add_option("--step", o->step, "with --workload: the ProfilerStep of imported traces to replay (default: last)");
  cmd->add_flag("--no-host-gaps", o->no_host_gaps,
                "with --workload: drop the measured CPU-bound gaps between kernels (a GPU-bound prediction)");
  return [cmd, o]() { return cmd->parsed() ? run_simulate(*o) : -1; };
}

}  // namespace stepsim::cli
