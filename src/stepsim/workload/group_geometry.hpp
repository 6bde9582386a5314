#pragma once
// Where a communication group's members sit: a property of the rank layout (which ranks share a node) that the
// collective models time collectives by.
namespace stepsim::workload {

// n ranks over `nodes` nodes, at most `ranks_per_node` on one node.
struct GroupGeometry {
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node = 1;
  bool operator==(const GroupGeometry&) const = default;
};
// A caller's geometry made consistent: 1 <= nodes <= ranks, ceil(ranks/nodes) <= ranks_per_node <= ranks, and
// ranks_per_node = ranks on one node.
GroupGeometry normalized(const GroupGeometry& g);

}  // namespace stepsim::workload
