// stepsim simulate: one training step of the job, every rank simulated; summary on stdout, optional
// summary JSON and Chrome trace. The work is the library's (api/simulate.hpp); this file parses and prints.
#include <cstdio>
#include <iostream>
#include <memory>

#include "stepsim/api/simulate.hpp"
#include "stepsim/cli/commands.hpp"
#include "stepsim/report/progress_bar.hpp"
#include "stepsim/report/summary.hpp"

namespace stepsim::cli {

namespace {

// The library's options plus what only the terminal needs.
struct SimulateOptions : api::SimulateOptions {
  bool quiet = false;
};

int run_simulate(const SimulateOptions& o) {
  report::ProgressBar bar(stderr, report::ProgressBar::mode_for(o.quiet));
  api::SimulateOptions lo = o;
  lo.progress = bar.callback();
  const api::SimulateOutput out = api::simulate(lo);
  bar.clear();
  const report::Summary& sum = out.summary;
  const api::TraceRunInfo& info = out.trace_info;
  const sim::Simulation& s = out.sim;
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
  api::write_outputs(o, out);
  if (!o.trace_path.empty() && !o.quiet) std::cout << "  trace: " << o.trace_path << " (open in ui.perfetto.dev)\n";
  api::check_fit(o, out);  // outputs are written either way; --require-fit makes the verdict the exit code
  return 0;
}

}  // namespace

Action add_simulate(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "simulate one training step on every rank");
  add_job_options(*cmd, o->job);
  cmd->add_option("--json", o->json_path, "write the summary JSON here")->check(output_file());
  cmd->add_option("--dump-job", o->dump_job_path,
                  "write the job as read (converters, cluster file and --set applied) as a job YAML here; "
                  "simulating it gives the same step")
      ->check(output_file());
  cmd->add_option("--trace", o->trace_path, "write a Chrome trace (Perfetto) here")->check(output_file());
  cmd->add_option("--trace-ranks", o->trace_ranks, "ranks in the trace, e.g. 0-7,64 (default: one per stage)");
  cmd->add_option("--memory-csv", o->memory_csv, "write memory over time of the traced ranks (CSV) here")->check(output_file());
  cmd->add_option("--report", o->report_path, "write a self-contained HTML report with charts here (docs/REPORTS.md)")
      ->check(output_file());
  cmd->add_option("--rank", o->rank, "rank for the breakdown and communication bytes (default 0)");
  cmd->add_flag("--quiet", o->quiet, "print nothing on success");
  cmd->add_flag("--require-fit", o->require_fit,
                "exit 2 when the job does not fit the GPU memory (by default it is reported first and the exit is 0)");
  cmd->add_option("--workload", o->workload_dir,
                  "trace-driven: replay the traced ranks in DIR (stepsim trace import/extrapolate, python3 -m stepsim.trace)");
  cmd->add_option("--step", o->step, "with --workload: the ProfilerStep of imported traces to replay (default: last)")
      ->check(whole_number_at_least(0));
  cmd->add_flag("--no-host-gaps", o->no_host_gaps,
                "with --workload: drop the measured CPU-bound gaps between kernels (a GPU-bound prediction)");
  auto all_ranks = std::make_shared<bool>(false);
  cmd->add_flag("--all-ranks", *all_ranks,
                "simulate every rank, not one per class of symmetric ranks (same results, slower; = simulation.all_ranks)");
  return [cmd, o, all_ranks]() {
    if (!cmd->parsed()) return -1;
    if (*all_ranks) o->job.overrides.push_back("simulation.all_ranks=true");
    return run_simulate(*o);
  };
}

}  // namespace stepsim::cli
