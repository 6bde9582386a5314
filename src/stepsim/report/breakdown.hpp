#pragma once
// Where one rank's step time goes. Every nanosecond of [0, step] is counted once: compute (forward,
// backward, recompute), optimizer, communication that no compute hides (by parallelism, priority
// tp > cp > ep > pp > dp when several run at once), and the rest as pipeline bubble (idle: waiting for
// other stages, for stragglers, or for the step to end on other ranks); activation offload copies that nothing
// else hides count as offload (the optimizer's own host copies count as optimizer). With an overlap model, the time compute
// and optimizer kernels lost to communication kernels sharing the GPU is taken out of those two and shown as
// overlap_slowdown.
#include <array>
#include <cstdint>

#include "stepsim/sim/timeline.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::report {

// World: collectives over every rank that are no single dimension's group (traced runs only).
enum CommKind { kTp = 0, kCp, kEp, kPp, kDp, kWorld, kNumCommKinds };
const char* comm_kind_name(int k);
CommKind comm_kind_of(workload::GroupKind g);

struct Breakdown {
  double compute_s = 0, pipeline_bubble_s = 0, optimizer_s = 0, overlap_slowdown_s = 0;
  // GPU idle on host-side time: Host ops (a traced CPU gap, the MoE dispatcher's stall without the host issue model) and
  // ops the GPU could have started but the host had not issued yet (host issue model)
  double host_gap_s = 0;
  double offload_s = 0;   // activation offload: host<->device copies nothing else hides (compute waits for them)
  std::array<double, kNumCommKinds> exposed_comm_s{};
  double total_s() const;
};

struct CommBytes {
  std::array<uint64_t, kNumCommKinds> message{};  // sum of message sizes S (nccl-tests convention)
  std::array<uint64_t, kNumCommKinds> volume{};   // sum of S x bus factor
  std::array<uint64_t, kNumCommKinds> calls{};
};

Breakdown breakdown(const workload::Program& prog, const sim::RankTimeline& tl, int64_t step_ns);
CommBytes comm_bytes(const workload::Workload& w, int rank);

}  // namespace stepsim::report
