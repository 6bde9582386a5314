#include "stepsim/cli/load_job.hpp"

#include "stepsim/spec/input_error.hpp"
#include "stepsim/spec/job_loader.hpp"

namespace stepsim::cli {

spec::JobSpec load_job(const JobOptions& o) {
  const JobTree t = load_job_tree(o);
  return spec::job_from_node(t.root, t.source);
}

JobTree load_job_tree(const JobOptions& o) {
  if (!o.megatron_args.empty()) {
    if (!o.job_path.empty()) throw InputError("give a job file or --megatron-args, not both");
    if (o.cluster_path.empty()) throw InputError("--megatron-args needs --cluster CLUSTER.yaml");
    return {spec::load_megatron_tree(o.megatron_args, o.cluster_path, o.overrides), "megatron-args"};
  }
  if (o.job_path.empty()) throw InputError("missing job file (or --megatron-args \"...\" --cluster C.yaml)");
  if (!o.cluster_path.empty()) throw InputError("--cluster is only for --megatron-args; a job file has its cluster section");
  return {spec::load_job_tree(o.job_path, o.overrides), o.job_path};
}

}  // namespace stepsim::cli
