#pragma once
// Clock synchronisation over collectives (thesis §4.2.4): the kernels of one collective instance start close
// together on every member, so a member's start against the instance's tells its clock offset (eq. 4.7);
// t_synchronized = t + δ_r (eq. 4.8). No drift correction: a constant offset over the window is assumed.
//
// Clocks differ per node (Nsight Systems stamps kernels with its node's clock), and most collectives stay inside one
// node (TP, intra-node DP), where every member shares the skew: a median over all instances hides the node's offset
// (issue 15 item 2). So the offsets are found in two levels:
//   1. per pair of nodes, the median over the instances spanning both of (median start of the members on one node −
//      on the other); node offsets follow from the reference rank's node along the best-sampled pairs;
//   2. per rank, the median over its instances of (its node's members' median start − its start), added to its node's
//      offset (0 for a rank alone on its node in every instance).
// Instances are matched by operation (the caller keys them by communicator and opCount), so a missing kernel drops a
// member from one instance and shifts nothing else.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace stepsim::profile {

// One collective instance: (rank, kernel start ns) of each member that has a kernel for it.
using CollectiveInstance = std::vector<std::pair<int, int64_t>>;

// rank → offset in ns (added to that rank's timestamps), relative to the lowest rank seen. `host_of` gives each rank's
// node (ranks absent from it count as a node of their own). Instances with fewer than two members are ignored; ranks
// seen in none get no entry; a node no instance links to the reference rank's node keeps node offset 0.
std::map<int, int64_t> clock_offsets(const std::vector<CollectiveInstance>& instances,
                                     const std::map<int, std::string>& host_of = {});

}  // namespace stepsim::profile
