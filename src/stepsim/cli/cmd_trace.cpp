// stepsim trace import TRACE... --out DIR [--quiet]
#include "stepsim/cli/cmd_trace.hpp"

#include <cstdio>
#include <iostream>
#include <memory>

#include "stepsim/trace/import_output.hpp"
#include "stepsim/trace/trace_import.hpp"

namespace stepsim::cli {
namespace {

struct TraceArgs {
  std::vector<std::string> traces;
  std::string out;
  bool quiet = false;
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

int run_import(const TraceArgs& a) {
  const auto ranks = trace::import_traces(a.traces);
  trace::write_import(ranks, a.out);
  if (a.quiet) return 0;
  std::cout << "# stepsim trace import: " << ranks.size() << " rank(s) -> " << a.out << "\n"
            << "# rank  kernels  nccl  compute_busy_s  step_time_s  launches_linked  et_linked  source\n";
  for (const auto& r : ranks) {
    std::cout << "  " << r.rank << "  " << r.kernels << "  " << r.nccl_kernels << "  " << fixed(r.compute_busy_s, 6)
              << "  " << (r.step_time_s ? fixed(*r.step_time_s, 6) : std::string("-")) << "  " << r.launches_found
              << "  " << (r.execution_trace.empty() ? std::string("-") : std::to_string(r.et_linked)) << "  "
              << r.source << "\n";
  }
  return 0;
}

}  // namespace

Action add_trace(CLI::App& app) {
  auto a = std::make_shared<TraceArgs>();
  CLI::App* cmd = app.add_subcommand("trace", "import real traces as workload programs");
  cmd->require_subcommand(1);
  CLI::App* imp = cmd->add_subcommand("import", "PyTorch profiler (Kineto) traces, one per rank, and optional "
                                                 "execution traces (plain or .gz) to per-rank programs");
  imp->add_option("traces", a->traces, "trace files: Kineto traces and execution traces, any order")
      ->required()->expected(1, -1);
  imp->add_option("--out", a->out, "folder for rank<r>.json and summary.json")->required();
  imp->add_flag("--quiet", a->quiet, "do not print the table");
  return [imp, a]() { return imp->parsed() ? run_import(*a) : -1; };
}

}  // namespace stepsim::cli
