// stepsim trace import TRACE... --out DIR [--quiet]
// stepsim trace extrapolate TRACE [--et ET.json] --job JOB.yaml --out DIR [...] (docs/EXTRAPOLATION.md)
#include "stepsim/cli/cmd_trace.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "stepsim/cli/load_job.hpp"
#include "stepsim/extrapolate/extrapolate.hpp"
#include "stepsim/report/progress_bar.hpp"
#include "stepsim/spec/input_error.hpp"

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
  report::ProgressBar bar(stderr, !a.quiet && report::ProgressBar::terminal());
  const auto ranks = trace::import_traces(a.traces, bar.callback());
  bar.clear();
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

struct ExtrapolateArgs {
  extrapolate::Options opt;
  JobOptions job;
  std::string out, json, dp_overlap = "backward", schedule;
  bool quiet = false;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_extrapolate(ExtrapolateArgs& a) {
  if (a.dp_overlap != "backward" && a.dp_overlap != "after") throw InputError("--dp-overlap: must be backward or after");
  a.opt.dp_overlap = a.dp_overlap == "after" ? extrapolate::DpOverlap::After : extrapolate::DpOverlap::Backward;
  if (!a.schedule.empty()) a.opt.schedule = a.schedule;
  const spec::JobSpec job = load_job(a.job);
  const extrapolate::Extrapolation x = extrapolate::extrapolate(job, a.opt);
  extrapolate::write_extrapolation(x, job, a.opt, a.out);
  if (!a.json.empty()) write_output_file(a.json, read_text(a.out + "/extrapolation.json"), "--json");
  if (!a.quiet) std::cout << extrapolate::report_text(x, a.opt, a.out);
  return 0;
}

}  // namespace

Action add_trace(CLI::App& app) {
  auto a = std::make_shared<TraceArgs>();
  CLI::App* cmd = app.add_subcommand("trace", "import real traces as workload programs, or extrapolate one");
  cmd->require_subcommand(1);
  CLI::App* imp = cmd->add_subcommand("import", "PyTorch profiler (Kineto) traces, one per rank, and optional "
                                                 "execution traces (plain or .gz) to per-rank programs");
  imp->add_option("traces", a->traces, "trace files: Kineto traces and execution traces, any order")
      ->required()->expected(1, -1);
  imp->add_option("--out", a->out, "folder for rank<r>.json and summary.json")->required();
  imp->add_flag("--quiet", a->quiet, "do not print the table");
  auto x = std::make_shared<ExtrapolateArgs>();
  CLI::App* ext = cmd->add_subcommand("extrapolate", "one single-GPU trace to the data/tensor/pipeline-parallel "
                                                      "programs of a job (TrioSim-style extrapolation)");
  ext->add_option("trace", x->opt.trace, "the single-GPU Kineto (PyTorch profiler) trace")->required();
  ext->add_option("--et", x->opt.et, "the same run's execution trace (shapes: FLOPs, bytes, layers, gradients)");
  ext->add_option("--job", x->job.job_path, "job YAML: parallelism, batch sizes, cluster")->required();
  ext->add_option("--set", x->job.overrides, "override a job key (key=value), repeatable");
  ext->add_option("--out", x->out, "folder for rank<r>.json, summary.json and extrapolation.json")->required();
  ext->add_option("--dp-overlap", x->dp_overlap, "backward (DDP: a bucket's all-reduce when it is ready) or after");
  ext->add_option("--bucket-mb", x->opt.bucket_mb, "DDP bucket cap in MiB (default 25; the first bucket is 1 MiB)");
  ext->add_option("--schedule", x->schedule, "gpipe or 1f1b (default: the job's parallelism.schedule)");
  ext->add_option("--stages", x->opt.stages, "layer ranges per pipeline stage, e.g. 0-3,4-7 (default: balanced by time)");
  ext->add_option("--trace-batch", x->opt.trace_batch, "per-GPU batch the trace ran (default: the job's micro_batch_size)");
  ext->add_option("--json", x->json, "also write extrapolation.json (fit and what was generated) here")->check(output_file());
  ext->add_flag("--quiet", x->quiet, "do not print the report");
  return [imp, a, ext, x]() { return imp->parsed() ? run_import(*a) : ext->parsed() ? run_extrapolate(*x) : -1; };
}

}  // namespace stepsim::cli
