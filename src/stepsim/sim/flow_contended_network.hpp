#pragma once
// FlowContendedNetwork: the engine's ContendedNetwork on the flow-level FlowNetwork (comm_model: flow). Every
// collective becomes its NCCL-style phases (collective_phases) and every send/recv one flow on one network shared
// by the whole job, so concurrent transfers of different groups that cross the same links slow each other down.
// Semantics and limits: docs/NETWORK.md, "Jobs on the flow network".
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "stepsim/cost/collective/flow_collectives.hpp"
#include "stepsim/net/flow_network.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/sim/contended_network.hpp"

namespace stepsim::sim {

class FlowContendedNetwork final : public ContendedNetwork {
 public:
  explicit FlowContendedNetwork(hw::Topology topology, cost::FlowAlgorithm algo = cost::FlowAlgorithm::Auto);
  // net_ refers to topo_: neither may move.
  FlowContendedNetwork(const FlowContendedNetwork&) = delete;
  FlowContendedNetwork& operator=(const FlowContendedNetwork&) = delete;

  // Throw InputError when the flow model cannot carry the transfer (all-to-all too large, more photonic
  // circuits at a node than it has ports); the message names the collective and the rule.
  void start_collective(uint64_t tag, workload::CollType coll, uint64_t bytes, std::span<const int> ranks,
                        int64_t t_ns) override;
  void start_p2p(uint64_t tag, int src, int dst, uint64_t bytes, int64_t t_ns) override;
  int64_t next_event_ns() const override { return net_.next_completion_ns(); }
  void advance(int64_t t_ns, std::vector<uint64_t>& done) override { net_.advance(t_ns, done); }

  const cost::FlowNetwork& network() const { return net_; }
  uint64_t planned_collectives() const { return planned_; }  // collective_phases calls (cache misses)

 private:
  // A collective's phases depend only on (collective, bytes, ranks): plan each distinct one once.
  struct Key {
    int coll;
    uint64_t bytes;
    std::vector<int> ranks;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  const std::vector<cost::FlowPhase>& phases_of(workload::CollType coll, uint64_t bytes, std::span<const int> ranks);

  hw::Topology topo_;
  cost::FlowNetwork net_;
  cost::FlowAlgorithm algo_;
  std::unordered_map<Key, std::vector<cost::FlowPhase>, KeyHash> plans_;
  size_t planned_flows_ = 0;  // flows held by plans_, to bound its memory
  uint64_t planned_ = 0;
  Key probe_;  // reused lookup key
};

}  // namespace stepsim::sim
