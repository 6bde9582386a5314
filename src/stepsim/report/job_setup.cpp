#include "stepsim/report/job_setup.hpp"

#include <cstdio>

#include "stepsim/job/cluster_rates.hpp"
#include "stepsim/workload/model_dims.hpp"

namespace stepsim::report {

namespace {

std::string count_text(double n) {
  char buf[32];
  if (n >= 1e9) std::snprintf(buf, sizeof buf, "%.2f B", n / 1e9);
  else std::snprintf(buf, sizeof buf, "%.1f M", n / 1e6);
  return buf;
}

// How the data-parallel ranks hold the model, in the framework's own words.
std::string data_parallel_text(const spec::TrainingSpec& t) {
  switch (t.zero_stage) {
    case 0: return "replicated (DDP)";
    case 1:
      return t.framework == spec::Framework::Torchtitan ? "FSDP2 kept gathered under the pipeline (ZeRO-1)"
                                                        : "distributed optimizer (ZeRO-1)";
    case 2: return "gradients and optimizer sharded (ZeRO-2)";
    default:
      return t.framework == spec::Framework::Torchtitan ? "FSDP2 (ZeRO-3)"
             : t.framework == spec::Framework::DeepSpeed ? "DeepSpeed ZeRO-3"
                                                         : "parameters, gradients and optimizer sharded (ZeRO-3)";
  }
}

std::string overlaps_text(const spec::TrainingSpec& t) {
  std::string s;
  auto add = [&](const char* x) { s += (s.empty() ? "" : ", ") + std::string(x); };
  if (t.overlap_grad_reduce) add("grad-reduce");
  if (t.overlap_param_gather) add("param-gather");
  if (t.tp_comm_overlap) add("TP (userbuffers)");
  return s.empty() ? "no communication overlapped" : s + " overlapped";
}

}  // namespace

std::string job_setup_text(const spec::JobSpec& job, double inter_node_efficiency) {
  const double total = static_cast<double>(workload::total_parameters(job.model));
  const double active = static_cast<double>(workload::active_parameters(job.model));
  char intra[64];
  std::snprintf(intra, sizeof intra, "links: intra-node %g GB/s, inter-node ", job.cluster.intra_node.bandwidth_GBps);
  const std::string links = intra + spec::inter_node_text(job.cluster, inter_node_efficiency);
  std::string s = "parameters " + count_text(total) + " (active " + count_text(active) + "); " +
                  data_parallel_text(job.training) + ", " + overlaps_text(job.training);
  if (job.training.precision == spec::Precision::Fp8) {
    s += "; fp8 recipe " + std::string(spec::name_of(job.training.fp8_recipe));
  }
  if (job.model.window_size > 0) {
    s += "; sliding window " + std::to_string(job.model.window_size) + " tokens on " +
         std::to_string(job.model.window_layer_count()) + " of " + std::to_string(job.model.num_layers) + " layers";
  }
  const spec::ClusterSpec& c = job.cluster;
  if (c.nvlink_domain > 0) {
    s += "; NVLink domains of " + std::to_string(c.nvlink_domain) + " GPUs: " +
         std::to_string(c.num_gpus / c.gpus_per_node) + " x " + std::to_string(c.gpus_per_node) + " (nodes of " +
         std::to_string(c.gpus_per_host()) + ")";
  }
  return s + "; " + links;
}

nlohmann::json job_setup_json(const spec::JobSpec& job, double inter_node_efficiency) {
  const spec::TrainingSpec& t = job.training;
  nlohmann::json j = {{"parameters", workload::total_parameters(job.model)},
                      {"active_parameters", workload::active_parameters(job.model)},
                      {"zero_stage", t.zero_stage},
                      {"data_parallel", data_parallel_text(t)},
                      {"overlap_grad_reduce", t.overlap_grad_reduce},
                      {"overlap_param_gather", t.overlap_param_gather},
                      {"tp_comm_overlap", t.tp_comm_overlap},
                      {"intra_node_GBps", job.cluster.intra_node.bandwidth_GBps},
                      {"inter_node_Gbps_per_gpu", 8 * spec::inter_node_GBps_per_gpu(job.cluster)},
                      {"inter_node_transport", job.cluster.inter_node.transport},
                      {"inter_node_bandwidth_efficiency", inter_node_efficiency}};
  if (t.precision == spec::Precision::Fp8) j["fp8_recipe"] = spec::name_of(t.fp8_recipe);
  if (job.cluster.nvlink_domain > 0) {
    j["nvlink_domain"] = job.cluster.nvlink_domain;
    j["gpus_per_nvlink_domain"] = job.cluster.gpus_per_node;
    j["gpus_per_host"] = job.cluster.gpus_per_host();
  }
  if (job.model.window_size > 0) {
    j["window_size"] = job.model.window_size;
    j["window_layers"] = job.model.window_layer_count();
  }
  return j;
}

}  // namespace stepsim::report
