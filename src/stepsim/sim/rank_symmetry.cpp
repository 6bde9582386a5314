#include "stepsim/sim/rank_symmetry.hpp"

#include <numeric>
#include <optional>

namespace stepsim::sim {
namespace {

using workload::GroupKind;
using workload::RankLayout;

RankSymmetry every_rank(int n) {
  RankSymmetry s;
  s.rep.resize(n);
  std::iota(s.rep.begin(), s.rep.end(), 0);
  s.simulated = n;
  return s;
}

// What the engine reads of a rank besides its program: its groups' geometry (memoised per group: computing one walks
// its members) and whether its pipeline neighbours share its node (a send/recv's time depends on it).
class Surroundings {
 public:
  explicit Surroundings(const RankLayout& l) : l_(l) {
    for (int g = 0; g < workload::kNumGroupKinds; ++g) geo_[g].resize(l.num_groups(static_cast<GroupKind>(g)));
  }
  bool same(int r, int rep) {
    for (int g = 0; g < workload::kNumGroupKinds; ++g) {
      // A kind that is no group of its own has one rank or the members of another kind, compared there.
      if (!l_.own_group(static_cast<GroupKind>(g))) continue;
      if (!(geometry(g, r) == geometry(g, rep))) return false;
    }
    auto same_node = [&](int a, int b) { return l_.node_of(a) == l_.node_of(b); };
    return same_node(r, l_.next_stage_rank(r)) == same_node(rep, l_.next_stage_rank(rep)) &&
           same_node(r, l_.prev_stage_rank(r)) == same_node(rep, l_.prev_stage_rank(rep));
  }

 private:
  const workload::GroupGeometry& geometry(int g, int rank) {
    const auto k = static_cast<GroupKind>(g);
    const int gid = l_.group_id(k, rank);
    auto& slot = geo_[g][gid];
    if (!slot) slot = l_.geometry(k, gid);
    return *slot;
  }
  const RankLayout& l_;
  std::vector<std::optional<workload::GroupGeometry>> geo_[workload::kNumGroupKinds];
};

}  // namespace

RankSymmetry find_rank_symmetry(const workload::Workload& w, const std::vector<int>& record_ranks, bool all_ranks,
                                bool contended_network) {
  const RankLayout& l = w.layout;
  const int n = l.world();
  if (all_ranks || contended_network || !w.bindings.empty() || !w.communicators.empty() ||
      !w.job.cluster.slow_ranks.empty() || l.context() * l.data() == 1) {
    return every_rank(n);
  }
  RankSymmetry s;
  s.rep.resize(n);
  Surroundings around(l);
  for (int r = 0; r < n; ++r) {
    workload::RankCoord c = l.coord(r);
    c.cp = 0;
    c.dp = 0;
    const int rep = l.rank_of(c);
    if (rep != r && (&w.program_of_rank(r) != &w.program_of_rank(rep) || !around.same(r, rep))) {
      return every_rank(n);
    }
    s.rep[r] = rep;
    s.simulated += rep == r;
  }
  for (int r : record_ranks) {
    if (r >= 0 && r < n && s.rep[r] != r) return every_rank(n);
  }
  return s;
}

}  // namespace stepsim::sim
