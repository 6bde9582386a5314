// stepsim trace import TRACE... --out DIR [--comm-groups FILE] [--quiet]  (Kineto traces, or Chakra ETs: docs/CHAKRA.md)
// stepsim trace export-chakra JOB --out DIR [--name NAME] [--set k=v]... [--quiet]
// stepsim trace extrapolate TRACE [--et ET.json] --job JOB.yaml --out DIR [...] (docs/EXTRAPOLATION.md)
#include "stepsim/cli/cmd_trace.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "stepsim/ingest/chakra/et_export.hpp"
#include "stepsim/ingest/chakra/et_import.hpp"
#include "stepsim/cli/load_job.hpp"
#include "stepsim/ingest/extrapolate/extrapolate.hpp"
#include "stepsim/report/progress_bar.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"

#include "stepsim/ingest/trace/import_output.hpp"
#include "stepsim/ingest/trace/trace_import.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::cli {
namespace {

struct TraceArgs {
  std::vector<std::string> traces;
  std::string out, comm_groups;
  bool quiet = false;
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

int run_chakra_import(const TraceArgs& a) {
  report::ProgressBar bar(stderr, !a.quiet && report::ProgressBar::terminal());
  const chakra::ChakraImport c = chakra::import_chakra(a.traces, a.comm_groups, bar.callback());
  bar.clear();
  chakra::write_chakra_import(c, a.out);
  if (a.quiet) return 0;
  std::cout << "# stepsim trace import: " << c.ranks.size() << " Chakra trace(s) -> " << a.out
            << (c.comm_groups.empty() ? std::string(" (no communicator-group file)") : " (groups: " + c.comm_groups + ")")
            << "\n# rank  nodes  compute_ops  comm_ops  compute_s  cpu_nodes_skipped  other_skipped  source\n";
  for (const auto& r : c.ranks) {
    std::cout << "  " << r.rank.rank << "  " << r.nodes << "  " << r.compute_ops << "  " << r.comm_ops << "  "
              << fixed(r.compute_s, 6)
              << "  " << r.cpu_nodes_skipped << "  " << r.other_nodes_skipped << "  " << r.rank.path << "\n";
  }
  std::cout << "# replay: stepsim simulate JOB --workload " << a.out << "\n";
  return 0;
}

int run_import(const TraceArgs& a) {
  if (chakra::looks_like_chakra(a.traces.front())) return run_chakra_import(a);
  if (!a.comm_groups.empty()) throw InputError("--comm-groups: applies to Chakra traces (.et or Chakra JSON) only");
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

struct ExportChakraArgs {
  JobOptions job;
  chakra::ExportOptions opt;
  bool quiet = false;
};

int run_export_chakra(ExportChakraArgs& a) {
  const spec::JobSpec job = load_job(a.job);
  const workload::Workload w = sim::timed_workload(catalog::shipped(), job);
  const chakra::ExportSummary s = chakra::export_chakra(w, a.opt);
  if (a.quiet) return 0;
  std::cout << "stepsim trace export-chakra: " << job.model.name << " on " << s.ranks << " ranks -> " << a.opt.dir << "\n"
            << "  files        " << a.opt.dir << "/" << a.opt.name << ".<rank>.et (" << s.ranks << "), "
            << fixed(static_cast<double>(s.bytes) / (1 << 20), 1) << " MiB\n"
            << "  nodes        " << s.nodes << " (" << s.nodes / std::max(1, s.ranks) << " per rank on average)\n"
            << "  groups       " << s.comm_groups << " in " << s.comm_group_file << "\n"
            << "  ASTRA-sim    --workload-configuration=" << a.opt.dir << "/" << a.opt.name
            << " --comm-group-configuration=" << s.comm_group_file << "\n"
            << "  back         stepsim trace import " << a.opt.dir << "/" << a.opt.name << ".*.et --out DIR; "
            << "stepsim simulate JOB --workload DIR\n";
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
  CLI::App* cmd = app.add_subcommand("trace", "import real traces (Kineto, Chakra) as workload programs, extrapolate one, "
                                              "or export a job as Chakra traces");
  cmd->require_subcommand(1);
  CLI::App* imp = cmd->add_subcommand("import", "PyTorch profiler (Kineto) traces, one per rank, and optional "
                                                 "execution traces (plain or .gz) to per-rank programs");
  imp->add_option("traces", a->traces, "trace files: Kineto traces and execution traces, any order")
      ->required()->expected(1, -1);
  imp->add_option("--out", a->out, "folder for rank<r>.json and summary.json")->required()->check(output_folder());
  imp->add_option("--comm-groups", a->comm_groups,
                  "Chakra traces: the communicator-group file their pg_name attributes refer to (default: "
                  "comm_group.json beside the first trace, when there is one)");
  imp->add_flag("--quiet", a->quiet, "do not print the table");
  auto e = std::make_shared<ExportChakraArgs>();
  CLI::App* exp = cmd->add_subcommand("export-chakra", "a job's per-rank programs as Chakra execution traces "
                                                        "(<name>.<rank>.et + comm_group.json) for ASTRA-sim");
  exp->add_option("job", e->job.job_path, "job YAML")->required();
  exp->add_option("--set", e->job.overrides, "override a job key (key=value), repeatable");
  exp->add_option("--out", e->opt.dir, "folder for the traces and comm_group.json")->required()->check(output_folder());
  exp->add_option("--name", e->opt.name, "file name prefix (default workload: workload.0.et, ...)");
  exp->add_flag("--quiet", e->quiet, "do not print the summary");
  auto x = std::make_shared<ExtrapolateArgs>();
  CLI::App* ext = cmd->add_subcommand("extrapolate", "one single-GPU trace to the data/tensor/pipeline-parallel "
                                                      "programs of a job (TrioSim-style extrapolation)");
  ext->add_option("trace", x->opt.trace, "the single-GPU Kineto (PyTorch profiler) trace")->required();
  ext->add_option("--et", x->opt.et, "the same run's execution trace (shapes: FLOPs, bytes, layers, gradients)");
  ext->add_option("--job", x->job.job_path, "job YAML: parallelism, batch sizes, cluster")->required();
  ext->add_option("--set", x->job.overrides, "override a job key (key=value), repeatable");
  ext->add_option("--out", x->out, "folder for rank<r>.json, summary.json and extrapolation.json")->required()
      ->check(output_folder());
  ext->add_option("--dp-overlap", x->dp_overlap, "backward (DDP: a bucket's all-reduce when it is ready) or after");
  ext->add_option("--bucket-mb", x->opt.bucket_mb, "DDP bucket cap in MiB (default 25; the first bucket is 1 MiB)");
  ext->add_option("--schedule", x->schedule, "gpipe or 1f1b (default: the job's parallelism.schedule)");
  ext->add_option("--stages", x->opt.stages, "layer ranges per pipeline stage, e.g. 0-3,4-7 (default: balanced by time)");
  ext->add_option("--trace-batch", x->opt.trace_batch, "per-GPU batch the trace ran (default: the job's micro_batch_size)");
  ext->add_option("--json", x->json, "also write extrapolation.json (fit and what was generated) here")->check(output_file());
  ext->add_flag("--quiet", x->quiet, "do not print the report");
  return [imp, a, ext, x, exp, e]() {
    return imp->parsed() ? run_import(*a) : ext->parsed() ? run_extrapolate(*x) : exp->parsed() ? run_export_chakra(*e) : -1;
  };
}

}  // namespace stepsim::cli
