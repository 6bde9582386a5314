// NCCL collectives as flow phases (flow_collectives.hpp; formulas in docs/NETWORK.md).
//
// Channels follow the NICs: across nodes NCCL runs one ring per NIC, and ring c enters AND leaves every node
// through the GPU of that node's c-th NIC. The node's members are visited starting at that GPU; the last
// member hands the data back to it over the node fabric (NCCL's PXN relay) and it sends to the next node's
// c-th-NIC GPU — so inter-node traffic stays on rail c. Each channel is one coupled phase.
#include "stepsim/cost/collective/flow_collectives.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {
namespace {

using workload::CollType;

// The group's members per node and, per node, the first member on each distinct NIC (the channel heads).
struct Layout {
  std::vector<int> node_ids;               // ascending
  std::vector<std::vector<int>> members;   // per node, ascending ranks
  std::vector<std::vector<int>> heads;     // per node: index into members of channel c's GPU
  int channels = 1;                        // NICs every node of the group can use
  int size() const {
    int n = 0;
    for (const auto& m : members) n += static_cast<int>(m.size());
    return n;
  }
};

Layout layout_of(const hw::Topology& t, std::span<const int> ranks) {
  std::map<int, std::vector<int>> by_node;
  for (int r : ranks) {
    if (r < 0 || r >= t.num_ranks())
      throw std::out_of_range("collective: rank " + std::to_string(r) + " outside the topology's " +
                              std::to_string(t.num_ranks()) + " ranks");
    by_node[t.node_of_rank(r)].push_back(r);
  }
  Layout L;
  L.channels = 1 << 30;
  for (auto& [node, v] : by_node) {
    std::sort(v.begin(), v.end());
    if (std::adjacent_find(v.begin(), v.end()) != v.end())
      throw std::invalid_argument("collective: rank " + std::to_string(*std::adjacent_find(v.begin(), v.end())) +
                                  " appears twice in the group");
    std::vector<int> nics, heads;
    for (size_t i = 0; i < v.size(); ++i) {
      const int nic = t.nic_of_rank(v[i]);
      if (std::find(nics.begin(), nics.end(), nic) == nics.end()) {
        nics.push_back(nic);
        heads.push_back(static_cast<int>(i));
      }
    }
    L.node_ids.push_back(node);
    L.members.push_back(std::move(v));
    L.heads.push_back(std::move(heads));
    L.channels = std::min(L.channels, static_cast<int>(L.heads.back().size()));
  }
  return L;
}

// A cycle over all members: node by node, each node's members rotated to start at its channel-c head.
struct Cycle {
  std::vector<int> order;  // ranks
  std::vector<int> head;   // head (rank) of order[i]'s node for this channel
};

Cycle cycle_of(const Layout& L, int c) {
  Cycle cy;
  for (size_t n = 0; n < L.members.size(); ++n) {
    const std::vector<int>& m = L.members[n];
    const int h = L.heads[n][c];
    for (size_t i = 0; i < m.size(); ++i) {
      cy.order.push_back(m[(h + i) % m.size()]);
      cy.head.push_back(m[h]);
    }
  }
  return cy;
}

// Builds one coupled phase from "hops" (logical sends of the algorithm) and sets its latency so that the
// phase ends `latency_s` after its last byte: FlowNetwork adds the largest path latency of the phase's
// flows, extra_latency_ns adds the rest.
class PhaseBuilder {
 public:
  // reverse: every flow goes the other way (a reduce is a broadcast's flows reversed).
  PhaseBuilder(hw::Router& r, double bytes, bool coupled, bool reverse = false) : router_(r), reverse_(reverse) {
    phase_.coupled = coupled;
    bytes_ = bytes;
  }
  // A send from a to b. Across nodes it goes from a to its node's head (over the node fabric) and from there
  // to b, which is the next node's head. Returns the hop's latency (sum of its flows' path latencies).
  double hop(int a, int b, int head_a) {
    const hw::Topology& t = router_.topology();
    if (t.node_of_rank(a) != t.node_of_rank(b) && a != head_a) return flow(a, head_a) + flow(head_a, b);
    return flow(a, b);
  }
  double flow(int src, int dst) {
    if (reverse_) std::swap(src, dst);
    const uint64_t salt = phase_.flows.size();  // the salt FlowNetwork routes this flow with
    phase_.flows.push_back({src, dst, bytes_});
    const double lat = router_.path_latency(vertex(src, dst), vertex(dst, src), salt);
    max_lat_ = std::max(max_lat_, lat);
    return lat;
  }
  // Rank -> vertex; kNodeSwitch -> the NVSwitch of the other end's node.
  int vertex(int rank, int other) const {
    const hw::Topology& t = router_.topology();
    return rank == kNodeSwitch ? t.nvswitch_of_node(t.node_of_rank(other)) : t.gpu_vertex(rank);
  }
  FlowPhase finish(double latency_s) {
    phase_.extra_latency_ns = std::max<int64_t>(0, ceil_ns(latency_s) - ceil_ns(max_lat_));
    return std::move(phase_);
  }

 private:
  hw::Router& router_;
  FlowPhase phase_;
  bool reverse_ = false;
  double bytes_ = 0;
  double max_lat_ = 0;
};

// Ring all-reduce / all-gather / reduce-scatter: every ring hop carries steps/n of the ring's share; the
// fixed latency is steps x the mean hop latency of the ring.
void ring_phases(hw::Router& router, const Layout& L, double S, double steps, std::vector<FlowPhase>& out) {
  const int n = L.size();
  // One node: two rings in opposite directions (bidirectional links on direct-connect fabrics); across
  // nodes: one ring per NIC.
  const bool one_node = L.members.size() == 1;
  const int rings = one_node ? 2 : L.channels;
  for (int c = 0; c < rings; ++c) {
    Cycle cy = cycle_of(L, one_node ? 0 : c);
    if (one_node && c == 1) std::reverse(cy.order.begin(), cy.order.end());
    PhaseBuilder b(router, steps / n * (S / rings), true);
    double lat = 0;
    for (int i = 0; i < n; ++i) lat += b.hop(cy.order[i], cy.order[(i + 1) % n], cy.head[i]);
    out.push_back(b.finish(steps * lat / n));
  }
}

// Ring exchange: every member sends S to its successor at once (one ring per NIC channel across nodes, each
// carrying S / channels; one ring inside a node, where context parallelism's K/V ring goes one way).
void sendrecv_phases(hw::Router& router, const Layout& L, double S, std::vector<FlowPhase>& out) {
  const int n = L.size();
  const int rings = L.members.size() == 1 ? 1 : L.channels;
  for (int c = 0; c < rings; ++c) {
    const Cycle cy = cycle_of(L, c);
    PhaseBuilder b(router, S / rings, true);
    double lat = 0;
    for (int i = 0; i < n; ++i) lat = std::max(lat, b.hop(cy.order[i], cy.order[(i + 1) % n], cy.head[i]));
    out.push_back(b.finish(lat));
  }
}

// Pipelined chain from the root (broadcast) or to it (reduce), one per NIC channel, each carrying S / channels.
void chain_phases(hw::Router& router, const Layout& L, double S, int root, bool toward_root,
                  std::vector<FlowPhase>& out) {
  const int n = L.size();
  const int chains = L.members.size() == 1 ? 1 : L.channels;
  for (int c = 0; c < chains; ++c) {
    const Cycle cy = cycle_of(L, c);
    const int r = static_cast<int>(std::find(cy.order.begin(), cy.order.end(), root) - cy.order.begin());
    PhaseBuilder b(router, S / chains, true, toward_root);
    double lat = 0;
    for (int i = 0; i + 1 < n; ++i) {
      const int a = (r + i) % n, z = (r + i + 1) % n;
      lat += b.hop(cy.order[a], cy.order[z], cy.head[a]);
    }
    out.push_back(b.finish(lat));
  }
}

// In-order binary tree over [lo, hi] hanging under `parent`; edges (parent, child), depth in edges.
void binary_tree(int lo, int hi, int parent, int depth, std::vector<std::pair<int, int>>& edges, int& max_depth) {
  if (lo > hi) return;
  const int mid = lo + (hi - lo) / 2;
  if (parent >= 0) edges.push_back({parent, mid});
  max_depth = std::max(max_depth, depth);
  binary_tree(lo, mid - 1, mid, depth + 1, edges, max_depth);
  binary_tree(mid + 1, hi, mid, depth + 1, edges, max_depth);
}

// Tree all-reduce, per NIC channel c: a chain inside every node starting at its channel-c GPU, and a double
// binary tree over the nodes between those GPUs (tree 0 in-order, tree 1 the same shifted by one node, so
// most interior nodes of one are leaves of the other). Reduce up and broadcast down are pipelined: every
// edge carries S / (2 x channels) each way, one coupled phase per (channel, tree). Latency: up and down
// the chain and the tree, 2 x (chain hops + depth x node-to-node latency).
void tree_phases(hw::Router& router, const Layout& L, double S, std::vector<FlowPhase>& out) {
  const int N = static_cast<int>(L.members.size());
  const int C = L.channels;
  std::vector<std::pair<int, int>> edges;
  int depth = 0;
  binary_tree(0, N - 1, -1, 0, edges, depth);
  for (int c = 0; c < C; ++c) {
    for (int t = 0; t < 2; ++t) {
      PhaseBuilder b(router, S / (2.0 * C), true);
      std::vector<int> head(N);
      double chain_lat = 0;
      for (int n = 0; n < N; ++n) {
        const std::vector<int>& m = L.members[n];
        const int h = L.heads[n][c];
        head[n] = m[h];
        double lat = 0;
        for (size_t i = 0; i + 1 < m.size(); ++i) {
          const int a = m[(h + i) % m.size()], z = m[(h + i + 1) % m.size()];
          lat += b.flow(a, z);
          b.flow(z, a);
        }
        chain_lat = std::max(chain_lat, lat);
      }
      double edge_lat = 0;
      for (auto [p, ch] : edges) {
        if (t == 1) {
          p = (p + 1) % N;
          ch = (ch + 1) % N;
        }
        edge_lat = std::max(edge_lat, b.flow(head[p], head[ch]));
        b.flow(head[ch], head[p]);
      }
      out.push_back(b.finish(2 * (chain_lat + depth * edge_lat)));
    }
  }
}

// NVLS (NVSwitch multicast/reduction): every GPU sends S to and receives S from its NVSwitch (uncoupled,
// latency one switch round trip); across nodes, one ring per NIC among the channel heads all-reduces the
// node results (concurrently: NCCL pipelines the two).
void nvls_phases(hw::Router& router, const Layout& L, double S, std::vector<FlowPhase>& out) {
  PhaseBuilder intra(router, S, false);
  double trip = 0;
  for (const auto& m : L.members)
    for (int r : m) trip = std::max(trip, intra.flow(r, kNodeSwitch) + intra.flow(kNodeSwitch, r));
  out.push_back(intra.finish(trip));
  const int N = static_cast<int>(L.members.size());
  if (N < 2) return;
  for (int c = 0; c < L.channels; ++c) {
    PhaseBuilder ring(router, 2.0 * (N - 1) / N * (S / L.channels), true);
    double lat = 0;
    for (int n = 0; n < N; ++n) {
      const int a = L.members[n][L.heads[n][c]];
      const int z = L.members[(n + 1) % N][L.heads[(n + 1) % N][c]];
      lat += ring.flow(a, z);
    }
    out.push_back(ring.finish(2.0 * (N - 1) * lat / N));
  }
}

// All-to-all: every rank sends S/n to every other rank, each pair its own flow. NCCL posts the peers in
// rounds, so the fixed latency is the sum of the first rank's path latencies to its peers.
void alltoall_phases(hw::Router& router, std::span<const int> ranks, double S, std::vector<FlowPhase>& out) {
  const int64_t n = static_cast<int64_t>(ranks.size());
  if (n * (n - 1) > kMaxAllToAllFlows)
    throw InputError("all-to-all over " + std::to_string(n) + " ranks would need " + std::to_string(n * (n - 1)) +
                     " flows; the flow network model expands at most " + std::to_string(kMaxAllToAllFlows));
  FlowPhase ph;
  ph.coupled = false;
  ph.flows.reserve(static_cast<size_t>(n * (n - 1)));
  double sum = 0, max_lat = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (i == j) continue;
      if (i == 0) {
        const double lat = router.path_latency(ranks[0], ranks[j], ph.flows.size());
        sum += lat;
        max_lat = std::max(max_lat, lat);
      }
      ph.flows.push_back({ranks[i], ranks[j], S / static_cast<double>(n)});
    }
  ph.extra_latency_ns = std::max<int64_t>(0, ceil_ns(sum) - ceil_ns(max_lat));
  out.push_back(std::move(ph));
}

bool nvswitch_everywhere(const hw::Topology& t, const Layout& L) {
  for (int node : L.node_ids)
    if (t.nvswitch_of_node(node) < 0) return false;
  return true;
}

}  // namespace

const char* name_of(FlowAlgorithm a) {
  switch (a) {
    case FlowAlgorithm::Auto: return "auto";
    case FlowAlgorithm::Ring: return "ring";
    case FlowAlgorithm::Tree: return "tree";
    case FlowAlgorithm::Nvls: return "nvls";
  }
  return "?";
}

FlowAlgorithm resolve_algorithm(const hw::Topology& topology, CollType coll, uint64_t bytes, std::span<const int> ranks,
                                FlowAlgorithm algo) {
  if (coll != CollType::AllReduce) return FlowAlgorithm::Ring;
  const Layout L = layout_of(topology, ranks);
  if (algo == FlowAlgorithm::Auto)
    return L.members.size() > 1 && bytes < kTreeMaxBytes ? FlowAlgorithm::Tree : FlowAlgorithm::Ring;
  if (algo == FlowAlgorithm::Nvls && !nvswitch_everywhere(topology, L)) return FlowAlgorithm::Ring;
  return algo;
}

std::vector<FlowPhase> collective_phases(hw::Router& router, CollType coll, uint64_t bytes, std::span<const int> ranks,
                                         FlowAlgorithm algo) {
  std::vector<FlowPhase> out;
  if (ranks.size() <= 1 || bytes == 0) return out;
  const hw::Topology& t = router.topology();
  const Layout L = layout_of(t, ranks);
  const double S = static_cast<double>(bytes);
  const int n = L.size();
  switch (coll) {
    case CollType::AllReduce:
      switch (resolve_algorithm(t, coll, bytes, ranks, algo)) {
        case FlowAlgorithm::Tree: tree_phases(router, L, S, out); break;
        case FlowAlgorithm::Nvls: nvls_phases(router, L, S, out); break;
        default: ring_phases(router, L, S, 2.0 * (n - 1), out); break;
      }
      break;
    case CollType::AllGather:
    case CollType::ReduceScatter: ring_phases(router, L, S, n - 1.0, out); break;
    case CollType::Broadcast: chain_phases(router, L, S, ranks[0], false, out); break;
    case CollType::Reduce: chain_phases(router, L, S, ranks[0], true, out); break;
    case CollType::AllToAll: alltoall_phases(router, ranks, S, out); break;
    case CollType::SendRecv: sendrecv_phases(router, L, S, out); break;
  }
  return out;
}

std::vector<FlowPhase> p2p_phases(int src, int dst, uint64_t bytes) {
  std::vector<FlowPhase> out;
  if (bytes == 0) return out;
  FlowPhase ph;
  ph.coupled = false;
  ph.flows.push_back({src, dst, static_cast<double>(bytes)});
  out.push_back(std::move(ph));
  return out;
}

FlowCollectiveModel::FlowCollectiveModel(const spec::ClusterSpec& cluster, FlowAlgorithm algo)
    : topo_(hw::build_topology(cluster)), algo_(algo), net_(topo_) {}

std::vector<int> FlowCollectiveModel::place(const GroupGeometry& g) const {
  const int n = std::max(g.ranks, 1);
  const int N = std::clamp(g.nodes, 1, n);
  const int k = topo_.gpus_per_node();
  if (N > topo_.num_nodes() || (n + N - 1) / N > k)
    throw std::invalid_argument("flow model: " + std::to_string(n) + " ranks over " + std::to_string(N) +
                                " nodes do not fit the cluster's " + std::to_string(topo_.num_nodes()) + " nodes of " +
                                std::to_string(k) + " GPUs");
  std::vector<int> ranks;
  for (int j = 0; j < N; ++j) {
    const int here = n / N + (j < n % N ? 1 : 0);
    for (int i = 0; i < here; ++i) ranks.push_back(j * k + i);
  }
  return ranks;
}

int64_t FlowCollectiveModel::run(std::vector<FlowPhase> phases) const {
  net_.reset();
  if (phases.empty()) return 0;
  net_.start(0, std::move(phases), 0);
  std::vector<uint64_t> done;
  while (done.empty()) {
    const int64_t t = net_.next_completion_ns();
    if (t == INT64_MAX) throw std::logic_error("flow model: the network went idle before the collective ended");
    net_.advance(t, done);
  }
  return net_.now_ns();
}

CollectiveEstimate FlowCollectiveModel::timed(CollType coll, uint64_t bytes, const GroupGeometry& g,
                                              FlowAlgorithm algo) const {
  const bool direct = coll == CollType::AllToAll;
  if (g.ranks <= 1 || bytes == 0) return {0, direct ? Algorithm::Direct : Algorithm::Ring, Protocol::Simple, 0};
  const auto key = std::make_tuple(static_cast<int>(coll), bytes, g.ranks, g.nodes, g.ranks_per_node,
                                   static_cast<int>(algo));
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const std::vector<int> ranks = place(g);
  const FlowAlgorithm used = resolve_algorithm(topo_, coll, bytes, ranks, algo);
  std::vector<FlowPhase> phases = collective_phases(net_.router(), coll, bytes, ranks, used);
  CollectiveEstimate e{0, Algorithm::Ring, Protocol::Simple, 0};
  for (const FlowPhase& p : phases) e.channels += p.coupled ? 1 : 0;
  switch (used) {
    case FlowAlgorithm::Tree: e.algorithm = Algorithm::Tree; break;
    case FlowAlgorithm::Nvls: e.algorithm = Algorithm::Nvls; break;
    default: e.algorithm = direct ? Algorithm::Direct : Algorithm::Ring; break;
  }
  e.ns = run(std::move(phases));
  cache_.emplace(key, e);
  return e;
}

int64_t FlowCollectiveModel::collective_ns(CollType coll, uint64_t bytes, const GroupGeometry& g) const {
  return timed(coll, bytes, g, algo_).ns;
}

CollectiveEstimate FlowCollectiveModel::estimate(CollType coll, uint64_t bytes, const GroupGeometry& g,
                                                 Algorithm algo, std::optional<Protocol> proto) const {
  require_simple_protocol(proto, "flow");
  switch (algo) {
    case Algorithm::Auto: return timed(coll, bytes, g, algo_);
    case Algorithm::Ring: return timed(coll, bytes, g, FlowAlgorithm::Ring);
    case Algorithm::Tree: return timed(coll, bytes, g, FlowAlgorithm::Tree);
    case Algorithm::Nvls: return timed(coll, bytes, g, FlowAlgorithm::Nvls);
    case Algorithm::Direct:
      if (coll == CollType::AllToAll) return timed(coll, bytes, g, FlowAlgorithm::Auto);
      break;
    case Algorithm::NvlsTree:
    case Algorithm::Pat:
    case Algorithm::CollNetDirect:
    case Algorithm::CollNetChain: break;
  }
  throw InputError(std::string("--algo ") + name_of(algo) +
                   ": the flow model runs ring, tree and nvls (auto: tree for all-reduce across nodes below 1 MiB, "
                   "else ring)");
}

int64_t FlowCollectiveModel::p2p_ns(uint64_t bytes, bool same_node) const {
  auto it = p2p_cache_.find({bytes, same_node});
  if (it != p2p_cache_.end()) return it->second;
  const int k = topo_.gpus_per_node();
  int dst = 0;  // rank 0 to a GPU of its node, or of the next node
  if (!same_node && topo_.num_nodes() > 1) dst = k;
  else if (k > 1) dst = 1;
  const int64_t ns = run(p2p_phases(0, dst, bytes));
  p2p_cache_.emplace(std::make_pair(bytes, same_node), ns);
  return ns;
}

std::unique_ptr<CollectiveModel> make_flow_model(const spec::ClusterSpec& cluster) {
  return std::make_unique<FlowCollectiveModel>(cluster);
}

}  // namespace stepsim::cost
