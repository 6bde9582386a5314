#pragma once
// Clock synchronisation over collectives (thesis §4.2.4): the kernels of one collective instance start close
// together on every member, so for each instance δ_r = median_r'(t_r') − t_r, the offset of a rank is the median
// of its δ over all instances, and offsets are made relative to the reference (lowest) rank: δ_r − δ_ref (eq. 4.7).
// t_synchronized = t + δ_r (eq. 4.8). No drift correction: a constant offset over the window is assumed.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace stepsim::profile {

// One collective instance: (rank, kernel start ns) of each member that has a kernel for it.
using CollectiveInstance = std::vector<std::pair<int, int64_t>>;

// rank → offset in ns (added to that rank's timestamps). Instances with fewer than two members are ignored;
// ranks seen in none get no entry.
std::map<int, int64_t> clock_offsets(const std::vector<CollectiveInstance>& instances);

}  // namespace stepsim::profile
