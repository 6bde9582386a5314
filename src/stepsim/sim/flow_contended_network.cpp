#include "stepsim/sim/flow_contended_network.hpp"

#include <string>
#include <utility>

#include "stepsim/io/input_error.hpp"

namespace stepsim::sim {
namespace {

// Plans are small (a ring of n ranks is about n flows per channel); past this many flows in all the cache is
// dropped and rebuilt, which bounds its memory on jobs with many distinct sizes.
constexpr size_t kMaxPlannedFlows = size_t{1} << 22;

std::string describe(workload::CollType coll, uint64_t bytes, std::span<const int> ranks) {
  std::string s = std::string(workload::name_of(coll)) + " of " + std::to_string(bytes) + " bytes over " +
                  std::to_string(ranks.size()) + " ranks (";
  for (size_t i = 0; i < ranks.size() && i < 4; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + (ranks.size() > 4 ? ", ...)" : ")");
}

}  // namespace

size_t FlowContendedNetwork::KeyHash::operator()(const Key& k) const {
  uint64_t h = k.bytes * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(k.coll);
  for (int r : k.ranks) h = (h ^ static_cast<uint32_t>(r)) * 0x100000001B3ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

FlowContendedNetwork::FlowContendedNetwork(hw::Topology topology, cost::FlowAlgorithm algo)
    : topo_(std::move(topology)), net_(topo_), algo_(algo) {}

const std::vector<cost::FlowPhase>& FlowContendedNetwork::phases_of(workload::CollType coll, uint64_t bytes,
                                                                   std::span<const int> ranks) {
  probe_.coll = static_cast<int>(coll);
  probe_.bytes = bytes;
  probe_.ranks.assign(ranks.begin(), ranks.end());
  if (auto it = plans_.find(probe_); it != plans_.end()) return it->second;
  std::vector<cost::FlowPhase> phases = cost::collective_phases(net_.router(), coll, bytes, ranks, algo_);
  ++planned_;
  size_t flows = 0;
  for (const cost::FlowPhase& p : phases) flows += p.flows.size();
  if (planned_flows_ + flows > kMaxPlannedFlows) {
    plans_.clear();
    planned_flows_ = 0;
  }
  planned_flows_ += flows;
  return plans_.emplace(probe_, std::move(phases)).first->second;
}

void FlowContendedNetwork::start_collective(uint64_t tag, workload::CollType coll, uint64_t bytes,
                                            std::span<const int> ranks, int64_t t_ns) {
  try {
    net_.start(t_ns, phases_of(coll, bytes, ranks), tag);
  } catch (const InputError& e) {
    // The network's own message names the rule; add which transfer of the job hit it.
    throw InputError("simulation.comm_model: flow: the " + describe(coll, bytes, ranks) + " cannot be carried: " +
                     e.what());
  }
}

void FlowContendedNetwork::start_p2p(uint64_t tag, int src, int dst, uint64_t bytes, int64_t t_ns) {
  try {
    net_.start(t_ns, cost::p2p_phases(src, dst, bytes), tag);
  } catch (const InputError& e) {
    throw InputError("simulation.comm_model: flow: the send/recv of " + std::to_string(bytes) + " bytes from rank " +
                     std::to_string(src) + " to rank " + std::to_string(dst) + " cannot be carried: " + e.what());
  }
}

}  // namespace stepsim::sim
