#include "stepsim/workload/group_geometry.hpp"

#include <algorithm>

namespace stepsim::workload {

GroupGeometry normalized(const GroupGeometry& g) {
  const int n = std::max(g.ranks, 1);
  const int N = std::clamp(g.nodes, 1, n);
  int k = std::max(g.ranks_per_node, (n + N - 1) / N);
  k = std::min(k, n);
  if (N == 1) k = n;
  return {n, N, k};
}

}  // namespace stepsim::workload
