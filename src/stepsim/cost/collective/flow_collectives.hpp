#pragma once
// NCCL-style collectives as FlowNetwork phases, and the flow CollectiveModel (comm_model: flow).
//
// collective_phases() turns one collective over explicit global ranks into phases that run concurrently
// and end together (FlowNetwork::start(t, phases, tag)), so an engine can put concurrent collectives of
// different groups on one shared FlowNetwork and let them contend. FlowCollectiveModel times one
// collective alone on an idle network. Decompositions and latency terms: docs/NETWORK.md.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/net/flow_network.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::cost {

// Auto: tree for all-reduce across more than one node below kTreeMaxBytes, ring otherwise (the NCCL model,
// comm_model: nccl, is where NCCL's own tuner lives). Tree applies to all-reduce only, NVLS to all-reduce
// on NVSwitch nodes only; elsewhere they fall back to ring.
enum class FlowAlgorithm { Auto, Ring, Tree, Nvls };
const char* name_of(FlowAlgorithm a);

inline constexpr uint64_t kTreeMaxBytes = uint64_t{1} << 20;
// Largest all-to-all expanded into pair flows (n(n-1) flows); larger ones are refused.
inline constexpr int64_t kMaxAllToAllFlows = int64_t{1} << 23;

// The algorithm `algo` stands for on this collective (Auto resolved, fall-backs applied).
FlowAlgorithm resolve_algorithm(const hw::Topology& topology, workload::CollType coll, uint64_t bytes,
                                std::span<const int> ranks, FlowAlgorithm algo);

// Phases of one collective of `bytes` (S as nccl-tests defines it) over global `ranks`. Empty when nothing
// moves (one rank or zero bytes). Throws InputError for all-to-all over more than kMaxAllToAllFlows flows.
std::vector<FlowPhase> collective_phases(hw::Router& router, workload::CollType coll, uint64_t bytes,
                                         std::span<const int> ranks, FlowAlgorithm algo = FlowAlgorithm::Auto);
// One send/recv of `bytes` from src to dst (global ranks).
std::vector<FlowPhase> p2p_phases(int src, int dst, uint64_t bytes);

class FlowCollectiveModel final : public CollectiveModel {
 public:
  explicit FlowCollectiveModel(const spec::ClusterSpec& cluster, FlowAlgorithm algo = FlowAlgorithm::Auto);
  int64_t collective_ns(workload::CollType coll, uint64_t bytes, const GroupGeometry& g) const override;
  int64_t p2p_ns(uint64_t bytes, bool same_node) const override;
  // `algo` Ring, Tree or Nvls forces that FlowAlgorithm (with resolve_algorithm's fall-backs to ring, which the
  // estimate then reports); Auto uses the model's own choice. Pat, NvlsTree and CollNet* throw InputError naming
  // --algo.
  // Protocol is always Simple (links run at full rate); channels = the pipelines run concurrently (rings,
  // trees, chains: one per NIC, or two rings on one node), 0 when there is none (all-to-all, NVLS in one node).
  CollectiveEstimate estimate(workload::CollType coll, uint64_t bytes, const GroupGeometry& g,
                              Algorithm algo = Algorithm::Auto,
                              std::optional<Protocol> proto = std::nullopt) const override;

  // The global ranks a geometry is placed on: consecutive GPUs of consecutive nodes, spread as evenly as
  // possible over `nodes` nodes. Throws std::invalid_argument when it does not fit the cluster.
  std::vector<int> place(const GroupGeometry& g) const;
  const hw::Topology& topology() const { return topo_; }
  // The network of the last timed call (statistics: busiest links, re-rates).
  const FlowNetwork& last_network() const { return net_; }

 private:
  int64_t run(std::vector<FlowPhase> phases) const;
  CollectiveEstimate timed(workload::CollType coll, uint64_t bytes, const GroupGeometry& g, FlowAlgorithm algo) const;

  hw::Topology topo_;
  FlowAlgorithm algo_;
  mutable FlowNetwork net_;  // reset for each call; keeps its routing cache
  // (collective, bytes, ranks, nodes, ranks per node, forced algorithm) -> estimate; not thread-safe
  mutable std::map<std::tuple<int, uint64_t, int, int, int, int>, CollectiveEstimate> cache_;
  mutable std::map<std::pair<uint64_t, bool>, int64_t> p2p_cache_;
};

std::unique_ptr<CollectiveModel> make_flow_model(const spec::ClusterSpec& cluster);

}  // namespace stepsim::cost
