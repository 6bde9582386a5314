// stepsim trace import TRACE... --out DIR [--comm-groups FILE] [--quiet]  (Kineto traces, or Chakra ETs: docs/CHAKRA.md)
// stepsim trace export-chakra JOB --out DIR [--name NAME] [--set k=v]... [--quiet]
// stepsim trace extrapolate TRACE [--et ET.json] --job JOB.yaml --out DIR [...] (docs/EXTRAPOLATION.md)
#include "stepsim/cli/cmd_trace.hpp"

#include <iostream>
#include <memory>

#include "stepsim/api/trace.hpp"
#include "stepsim/report/progress_bar.hpp"

namespace stepsim::cli {
namespace {

struct TraceArgs {
  api::TraceImportOptions opt;
  bool quiet = false;
};

int run_import(TraceArgs& a) {
  report::ProgressBar bar(stderr, report::ProgressBar::mode_for(a.quiet));
  a.opt.progress = bar.callback();
  const api::TraceImportOutput out = api::trace_import(a.opt);
  bar.clear();
  if (!a.quiet) std::cout << api::trace_import_text(a.opt, out);
  return 0;
}

struct ExportChakraArgs {
  api::ExportChakraOptions opt;
  bool quiet = false;
};

int run_export_chakra(ExportChakraArgs& a) {
  report::ProgressBar bar(stderr, report::ProgressBar::mode_for(a.quiet));
  a.opt.files.progress = bar.callback();
  const api::ExportChakraOutput out = api::export_chakra(a.opt);
  bar.clear();
  if (!a.quiet) std::cout << api::export_chakra_text(a.opt, out);
  return 0;
}

struct ExtrapolateArgs {
  api::ExtrapolateOptions opt;
  std::string json;
  bool quiet = false;
};

int run_extrapolate(const ExtrapolateArgs& a) {
  const api::ExtrapolateOutput out = api::extrapolate_trace(a.opt);
  if (!a.json.empty()) write_output_file(a.json, out.json, "--json");
  if (!a.quiet) std::cout << api::extrapolate_text(a.opt, out);
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
  imp->add_option("traces", a->opt.traces, "trace files: Kineto traces and execution traces, any order")
      ->required()->expected(1, -1);
  imp->add_option("--out", a->opt.out, "folder for rank<r>.json and summary.json")->required()->check(output_folder());
  imp->add_option("--comm-groups", a->opt.comm_groups,
                  "Chakra traces: the communicator-group file their pg_name attributes refer to (default: "
                  "comm_group.json beside the first trace, when there is one)");
  imp->add_flag("--quiet", a->quiet, "do not print the table");
  auto e = std::make_shared<ExportChakraArgs>();
  CLI::App* exp = cmd->add_subcommand("export-chakra", "a job's per-rank programs as Chakra execution traces "
                                                        "(<name>.<rank>.et + comm_group.json) for ASTRA-sim");
  exp->add_option("job", e->opt.job.job_path, "job YAML")->required();
  exp->add_option("--set", e->opt.job.overrides, "override a job key (key=value), repeatable");
  exp->add_option("--hf-config", e->opt.job.hf_config_path,
                  "a Hugging Face config.json as the job's model (its model keys written over it)");
  exp->add_option("--out", e->opt.files.dir, "folder for the traces and comm_group.json")->required()->check(output_folder());
  exp->add_option("--name", e->opt.files.name, "file name prefix (default workload: workload.0.et, ...)");
  exp->add_option("--max-gib", e->opt.files.max_gib, "refuse an export larger than this many GiB, estimated before "
                  "anything is written (default 4)");
  exp->add_flag("--quiet", e->quiet, "do not print the summary");
  auto x = std::make_shared<ExtrapolateArgs>();
  CLI::App* ext = cmd->add_subcommand("extrapolate", "one single-GPU trace to the data/tensor/pipeline-parallel "
                                                      "programs of a job (TrioSim-style extrapolation)");
  ext->add_option("trace", x->opt.fit.trace, "the single-GPU Kineto (PyTorch profiler) trace")->required();
  ext->add_option("--et", x->opt.fit.et, "the same run's execution trace (shapes: FLOPs, bytes, layers, gradients)");
  ext->add_option("--job", x->opt.job.job_path, "job YAML: parallelism, batch sizes, cluster")->required();
  ext->add_option("--set", x->opt.job.overrides, "override a job key (key=value), repeatable");
  ext->add_option("--hf-config", x->opt.job.hf_config_path,
                  "a Hugging Face config.json as the job's model (its model keys written over it)");
  ext->add_option("--out", x->opt.out, "folder for rank<r>.json, summary.json and extrapolation.json")->required()
      ->check(output_folder());
  ext->add_option("--dp-overlap", x->opt.dp_overlap, "backward (DDP: a bucket's all-reduce when it is ready) or after");
  ext->add_option("--bucket-mb", x->opt.fit.bucket_mb, "DDP bucket cap in MiB (default 25; the first bucket is 1 MiB)");
  ext->add_option("--schedule", x->opt.schedule, "gpipe or 1f1b (default: the job's parallelism.schedule)");
  ext->add_option("--stages", x->opt.fit.stages, "layer ranges per pipeline stage, e.g. 0-3,4-7 (default: balanced by time)");
  ext->add_option("--trace-batch", x->opt.fit.trace_batch, "per-GPU batch the trace ran (default: the job's micro_batch_size)");
  ext->add_option("--json", x->json, "also write extrapolation.json (fit and what was generated) here")->check(output_file());
  ext->add_flag("--quiet", x->quiet, "do not print the report");
  return [imp, a, ext, x, exp, e]() {
    return imp->parsed() ? run_import(*a) : ext->parsed() ? run_extrapolate(*x) : exp->parsed() ? run_export_chakra(*e) : -1;
  };
}

}  // namespace stepsim::cli
