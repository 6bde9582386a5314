#pragma once
// One call from a validated job to a simulated step: builds the Megatron workload, picks the cost
// models the job asks for, fills compute times and runs the engine.
#include <memory>
#include <vector>

#include "stepsim/sim/engine.hpp"
#include "stepsim/spec/job_spec.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::sim {

struct Simulation {
  workload::Workload workload;
  SimResult result;
};

// The collective model a job asks for (simulation.comm_model), built for its cluster.
std::unique_ptr<cost::CollectiveModel> make_collective_model(spec::CommModel model, const spec::ClusterSpec& cluster);
std::unique_ptr<cost::CollectiveModel> make_collective_model(const spec::JobSpec& job);

// record_ranks: ranks whose timelines are kept (trace, breakdown).
Simulation run_simulation(const spec::JobSpec& job, const std::vector<int>& record_ranks);

}  // namespace stepsim::sim
