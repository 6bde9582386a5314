#include "stepsim/cost/collective_model.hpp"

#include <algorithm>

#include "stepsim/spec/input_error.hpp"

namespace stepsim::cost {

GroupGeometry normalized(const GroupGeometry& g) {
  const int n = std::max(g.ranks, 1);
  const int N = std::clamp(g.nodes, 1, n);
  int k = std::max(g.ranks_per_node, (n + N - 1) / N);
  k = std::min(k, n);
  if (N == 1) k = n;
  return {n, N, k};
}

CollectiveEstimate CollectiveModel::estimate(workload::CollType coll, uint64_t bytes, const GroupGeometry& g,
                                             Algorithm algo, std::optional<Protocol> proto) const {
  require_simple_protocol(proto, "chosen");
  if (algo != Algorithm::Auto && algo != Algorithm::Ring) {
    throw InputError(std::string("--algo ") + name_of(algo) + ": this collective model times ring collectives only");
  }
  return {collective_ns(coll, bytes, g), coll == workload::CollType::AllToAll ? Algorithm::Direct : Algorithm::Ring,
          Protocol::Simple, 0};
}

}  // namespace stepsim::cost
