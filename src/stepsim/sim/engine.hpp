#pragma once
// Engine: discrete-event simulation of every rank of a Workload for one step.
//   - each rank has FIFO streams (compute, tp, cp, ep, pp, dp, memcpy); an op starts when its stream is
//     free and its waits (counts of completed ops on other streams) are met;
//   - a collective starts when the last member of its group arrives and ends at the same time on all
//     members (Echo's synchronisation stage: a straggler delays its whole group);
//   - a batched send/recv ends when each of its transfers has been matched with the peer's and carried;
//   - compute ops take the compute model's time times the rank's slow-down factor, and with an overlap model
//     progress at 1/(1 + s) of that speed while communication ops are in flight on the rank (s recomputed
//     whenever that set changes).
// Time is integer nanoseconds; events are ordered by (time, sequence), so results are bit-identical.
#include <memory>
#include <stdexcept>
#include <vector>

#include "stepsim/io/progress.hpp"
#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/cost/overlap/overlap_model.hpp"
#include "stepsim/sim/timeline.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::sim {

class ContendedNetwork;

struct EngineOptions {
  std::vector<int> record_ranks;  // ranks whose op timeline and memory series are kept
  // When set, collectives and send/recv are carried by this network (links shared between concurrent transfers)
  // instead of being timed alone by the CollectiveModel.
  ContendedNetwork* network = nullptr;
  // When set, compute ops on the compute stream slow down while communication ops run on the same rank.
  const cost::OverlapModel* overlap = nullptr;
  double peak_flops = 0;  // GPU's dense FLOP/s in the training precision, for the SM-throughput feature
  double hbm_Bps = 0;     // GPU's HBM bandwidth, for the DRAM-throughput feature
  // Simulate every rank even where ranks mirror a representative (rank_symmetry.hpp); results are the same.
  bool all_ranks = false;
  // "simulating": events handled of about as many as the simulated ranks' ops, every 65,536 events.
  ProgressFn progress;
};

// Fills every compute op's duration_ns from the model (once per shared program).
void assign_compute_durations(workload::Workload& w, const cost::ComputeModel& model);

// Thrown when ops are left that can never start (a cycle of waits). A built-in workload that deadlocks is a bug;
// a traced one records communication no real run could have done (e.g. both peers receive first).
struct DeadlockError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

SimResult simulate(const workload::Workload& w, const cost::CollectiveModel& comm, const EngineOptions& opt);

}  // namespace stepsim::sim
