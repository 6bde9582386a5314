#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {

void add_job_options(CLI::App& cmd, JobOptions& o) {
  cmd.add_option("job", o.job_path, "job file (YAML)");
  cmd.add_option("--megatron-args", o.megatron_args, "the job as a Megatron-LM argument string (with --cluster)");
  cmd.add_option("--cluster", o.cluster_path, "cluster YAML, for --megatron-args");
  cmd.add_option("--set", o.overrides, "override a job key: --set model.num_layers=80 (repeatable)");
}

}  // namespace stepsim::cli
