#pragma once
// Rank symmetry (issue 17 item 2): ranks whose programs, group geometries and inputs are the same up to their
// context- and data-parallel indices produce the same timeline, so the engine simulates one representative per class
// (the rank with context and data index 0: tp x pp ranks) and copies its results to the others, which it calls
// mirrored. Every collective of a representative then waits only for the representatives among its group's members
// (a mirrored member arrives exactly when its representative does), and a pipeline send/recv pairs two
// representatives. Whatever could set a rank apart makes every rank simulated: a contended (flow) network, a
// straggler factor, a trace-driven workload (explicit communicators), a program, group geometry or pipeline link
// (same node or not) that differs from its representative's, or a recorded rank that is not a representative.
#include <vector>

#include "stepsim/workload/program.hpp"

namespace stepsim::sim {

struct RankSymmetry {
  std::vector<int> rep;  // per rank: the rank simulated in its place (itself when simulated)
  int simulated = 0;     // ranks with rep[r] == r
  int mirrored() const { return static_cast<int>(rep.size()) - simulated; }
};

// All ranks simulated when `all_ranks` or `contended_network` is set or the workload breaks the symmetry.
RankSymmetry find_rank_symmetry(const workload::Workload& w, const std::vector<int>& record_ranks, bool all_ranks,
                                bool contended_network);

}  // namespace stepsim::sim
