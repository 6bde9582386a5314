#include "stepsim/ingest/profile/clock_sync.hpp"

#include <algorithm>
#include <set>

namespace stepsim::profile {
namespace {

// Lower median for an even count: an observed value, no rounding of the mean of two.
int64_t median(std::vector<int64_t> v) {
  const size_t mid = (v.size() - 1) / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

}  // namespace

std::map<int, int64_t> clock_offsets(const std::vector<CollectiveInstance>& instances,
                                     const std::map<int, std::string>& host_of) {
  // Node of each rank: the given host, else the rank itself (a node of its own).
  auto node = [&](int rank) {
    auto it = host_of.find(rank);
    return it != host_of.end() ? "h:" + it->second : "r:" + std::to_string(rank);
  };
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> pair_diffs;  // (a, b) → start_a − start_b
  std::map<int, std::vector<int64_t>> residual;                                   // rank → node median − its start
  std::set<int> seen;
  for (const auto& inst : instances) {
    if (inst.size() < 2) continue;
    std::map<std::string, std::vector<int64_t>> by_node;
    for (const auto& [rank, t] : inst) {
      by_node[node(rank)].push_back(t);
      seen.insert(rank);
    }
    std::map<std::string, int64_t> node_start;
    for (const auto& [n, starts] : by_node) node_start[n] = median(starts);
    for (auto a = node_start.begin(); a != node_start.end(); ++a)
      for (auto b = std::next(a); b != node_start.end(); ++b) pair_diffs[{a->first, b->first}].push_back(a->second - b->second);
    for (const auto& [rank, t] : inst) residual[rank].push_back(node_start[node(rank)] - t);
  }
  std::map<int, int64_t> out;
  if (seen.empty()) return out;

  // Node offsets: δ_b − δ_a = median(start_a − start_b) over the instances spanning a and b. Walk out from the reference
  // rank's node, always taking the pair with the most instances next (a maximum spanning tree by sample count).
  std::map<std::string, int64_t> node_offset{{node(*seen.begin()), 0}};
  std::map<std::pair<std::string, std::string>, int64_t> pair_median;
  for (auto& [key, d] : pair_diffs) pair_median[key] = median(d);
  for (;;) {
    const std::pair<std::string, std::string>* best = nullptr;
    size_t best_n = 0;
    for (const auto& [key, d] : pair_diffs) {
      const bool a = node_offset.count(key.first) > 0, b = node_offset.count(key.second) > 0;
      if (a != b && d.size() > best_n) best = &key, best_n = d.size();
    }
    if (!best) break;
    const auto& [a, b] = *best;
    if (node_offset.count(a)) node_offset[b] = node_offset[a] + pair_median[*best];
    else node_offset[a] = node_offset[b] - pair_median[*best];
  }
  for (int rank : seen) {
    auto it = node_offset.find(node(rank));
    out[rank] = (it != node_offset.end() ? it->second : 0) + median(residual[rank]);
  }
  const int64_t base = out.begin()->second;  // the lowest rank is the reference (rank 0 when present)
  for (auto& [rank, off] : out) off -= base;
  return out;
}

}  // namespace stepsim::profile
