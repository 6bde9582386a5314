#pragma once
// Topology: the cluster's network as a graph the flow-level model routes over. Vertices are GPUs,
// switches, CPU sockets and NICs; links are DIRECTED (a full-duplex cable is two links) with a bandwidth
// in bytes/s and a latency in seconds. Families and their parameters: docs/NETWORK.md.
//
// GPU vertex ids equal global ranks (rank r = local GPU r % gpus_per_node of node r / gpus_per_node,
// Megatron's rank order with consecutive nodes), so rank -> vertex costs nothing.
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::hw {

enum class VertexKind : uint8_t { Gpu, NvSwitch, PcieSwitch, Cpu, Nic, Leaf, Spine, Core, Optical, CircuitSwitch };

const char* name_of(VertexKind k);

struct Vertex {
  VertexKind kind = VertexKind::Gpu;
  int32_t node = -1;   // node the vertex sits in; -1 for fabric switches
  int32_t index = 0;   // index among vertices of its kind in its node (or group)
  int32_t group = -1;  // pod (fat-tree-3) or rail (rail-optimized) of a switch; -1 = none
};

struct Link {
  int32_t from = 0;
  int32_t to = 0;
  double bandwidth = 0;  // bytes/s, one direction
  double latency = 0;    // seconds
};

// Circuit-switched (photonic) fabric: circuits connect two nodes' optical vertices through the circuit
// switch; the flow model sets them up on demand (cost/flow_network.hpp).
struct PhotonicParams {
  bool enabled = false;
  int ports_per_node = 0;
  double port_bandwidth = 0;  // bytes/s per circuit, one direction
  double setup_s = 0;         // time to establish one circuit
  double circuit_latency = 0; // seconds, one traversal of a circuit
};

// Largest graph build_topology makes (vertices); bigger clusters are refused with an InputError.
constexpr int kMaxTopologyVertices = 1 << 20;

class Topology {
 public:
  int vertex_count() const { return static_cast<int>(vertices_.size()); }
  int link_count() const { return static_cast<int>(links_.size()); }
  const Vertex& vertex(int v) const { return vertices_[v]; }
  const Link& link(int l) const { return links_[l]; }
  std::span<const int32_t> out_links(int v) const {
    return {out_.data() + out_begin_[v], out_.data() + out_begin_[v + 1]};
  }
  std::span<const int32_t> in_links(int v) const {
    return {in_.data() + in_begin_[v], in_.data() + in_begin_[v + 1]};
  }
  // The link from -> to; -1 when there is none.
  int find_link(int from, int to) const;

  int num_ranks() const { return num_nodes_ * gpus_per_node_; }
  int num_nodes() const { return num_nodes_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int gpu_vertex(int rank) const { return rank; }
  int node_of_rank(int rank) const { return rank / gpus_per_node_; }
  // The NVSwitch of a node (NVLS targets); -1 when the node has none.
  int nvswitch_of_node(int node) const;
  // The NIC a GPU sends through (nearest by construction); -1 when the fabric has no NICs.
  int nic_of_rank(int rank) const;

  std::string vertex_name(int v) const;  // "node3/gpu2", "node3/nic2", "leaf1", "pod0/spine3", "ocs"
  std::string link_name(int l) const;    // "node3/nic2->leaf1"
  int find_vertex(const std::string& name) const;  // -1 when no vertex has that name

  spec::NodeFabric node_fabric() const { return node_fabric_; }
  spec::Fabric fabric() const { return fabric_; }
  const PhotonicParams& photonic() const { return photonic_; }
  spec::Routing routing() const { return routing_; }

 private:
  friend class TopologyBuilder;
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<int32_t> out_begin_, out_, in_begin_, in_;
  std::vector<int32_t> nvswitch_of_node_;  // per node, -1 = none
  std::vector<int32_t> nic_of_rank_;       // per rank, -1 = none
  int num_nodes_ = 0;
  int gpus_per_node_ = 1;
  spec::NodeFabric node_fabric_ = spec::NodeFabric::NvSwitch;
  spec::Fabric fabric_ = spec::Fabric::FatTree;
  spec::Routing routing_ = spec::Routing::DestMod;
  PhotonicParams photonic_;
};

// Assembles a Topology: GPU vertices 0..nodes*gpus_per_node-1 exist from the start; add switches and
// links, then finish(). Tests build small hand-made graphs with it.
class TopologyBuilder {
 public:
  TopologyBuilder(int num_nodes, int gpus_per_node);
  int add_vertex(VertexKind kind, int node, int index, int group = -1);
  int add_link(int from, int to, double bandwidth, double latency);
  void add_cable(int a, int b, double bandwidth, double latency);  // both directions
  int vertex_count() const { return static_cast<int>(t_.vertices_.size()); }
  void set_families(spec::NodeFabric node, spec::Fabric fabric) {
    t_.node_fabric_ = node;
    t_.fabric_ = fabric;
  }
  void set_nvswitch(int node, int vertex) { t_.nvswitch_of_node_[node] = vertex; }
  void set_nic(int rank, int vertex) { t_.nic_of_rank_[rank] = vertex; }
  void set_photonic(const PhotonicParams& p) { t_.photonic_ = p; }
  void set_routing(spec::Routing r) { t_.routing_ = r; }
  // Multiplies the bandwidth of a link (slow links).
  void scale_link(int l, double factor) { t_.links_[l].bandwidth *= factor; }
  const Link& link(int l) const { return t_.links_[l]; }
  int link_count() const { return static_cast<int>(t_.links_.size()); }
  Topology finish();

 private:
  Topology t_;
};

// The cluster's topology from cluster.network (defaults: NVSwitch nodes, one NIC per GPU, two-tier
// non-blocking fat-tree). Throws InputError naming the key for impossible settings.
Topology build_topology(const spec::ClusterSpec& cluster);

// Shortest paths by hop count. Ties are broken at every vertex over the equal-cost next hops in link order:
// ECMP by a hash of (src, dst, salt, vertex); d-mod-k by dst modulo their number (cluster.network.routing).
// Either way a route is a pure function of its arguments. Distances to
// a destination come from a breadth-first search over in-links that stops once the source is labelled
// and resumes when a farther source asks; searches are cached per destination (LRU, bounded memory), and
// finished routes per (src, dst, salt) (cleared when full). Caches change speed, never results.
class Router {
 public:
  explicit Router(const Topology& topology, size_t cache_bytes = size_t{64} << 20);
  // Appends the links of the path src -> dst (vertex ids) to `links`; nothing when src == dst.
  // Throws std::runtime_error when dst cannot be reached.
  void route(int src, int dst, uint64_t salt, std::vector<int32_t>& links);
  int hops(int src, int dst);
  // Sum of link latencies along route(src, dst, salt).
  double path_latency(int src, int dst, uint64_t salt = 0);
  const Topology& topology() const { return topo_; }
  uint64_t searches() const { return searches_; }  // breadth-first searches started (cache misses)

 private:
  struct Search {
    std::vector<int32_t> dist;   // hops to the destination; -1 = not labelled yet
    std::vector<uint8_t> to_gpu; // a NIC whose route to the destination leaves through one of its GPUs
    std::vector<int32_t> queue;  // BFS order; [head, size) still to expand
    size_t head = 0;
    uint64_t last_use = 0;
  };
  Search& search_to(int dst, int src);
  bool is(int v, VertexKind k) const;
  bool bridges_gpus(const Search& s, int from, int nic) const;
  void walk(int src, int dst, uint64_t salt, std::vector<int32_t>& links);
  const Topology& topo_;
  bool destination_mod_;
  size_t max_searches_;
  std::unordered_map<int32_t, Search> cache_;  // looked up only; eviction scans for the oldest last_use
  // Finished routes: key (src, dst, salt) -> [begin, end) in path_links_.
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> paths_;
  std::vector<int32_t> path_links_;
  size_t max_path_links_;
  uint64_t clock_ = 0;
  uint64_t searches_ = 0;
};

}  // namespace stepsim::hw
