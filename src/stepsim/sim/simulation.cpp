#include "stepsim/sim/simulation.hpp"

#include "stepsim/cost/nccl_model.hpp"
#include "stepsim/hw/gpu_catalog.hpp"
#include "stepsim/spec/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"

namespace stepsim::sim {

std::unique_ptr<cost::CollectiveModel> make_collective_model(spec::CommModel model, const spec::ClusterSpec& cluster) {
  switch (model) {
    case spec::CommModel::AlphaBeta: return cost::make_alpha_beta_model(cluster);
    case spec::CommModel::Nccl: return cost::make_nccl_model(cluster);
    case spec::CommModel::Flow: break;
  }
  throw InputError(std::string("simulation.comm_model: '") + spec::name_of(model) +
                   "' is not available in this version; use alpha-beta or nccl");
}

std::unique_ptr<cost::CollectiveModel> make_collective_model(const spec::JobSpec& job) {
  return make_collective_model(job.simulation.comm_model, job.cluster);
}

Simulation run_simulation(const spec::JobSpec& job, const std::vector<int>& record_ranks) {
  Simulation s;
  s.workload = workload::build_megatron_workload(job);
  const hw::GpuSpec& gpu = hw::GpuCatalog::builtin().find(job.cluster.gpu);
  const auto compute = cost::make_roofline_model(gpu, job.training.precision);
  assign_compute_durations(s.workload, *compute);
  const auto comm = make_collective_model(job);
  EngineOptions opt;
  opt.record_ranks = record_ranks;
  s.result = simulate(s.workload, *comm, opt);
  return s;
}

}  // namespace stepsim::sim
