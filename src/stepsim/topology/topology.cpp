// Topology graph: storage, names, the builder, slow-link rules and build_topology's dispatch to the
// node and fabric families (topology_node.cpp, topology_fabric.cpp).
#include "stepsim/topology/topology.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "stepsim/topology/topology_families.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::hw {
namespace {

constexpr int64_t kMaxLinks = int64_t{1} << 26;

std::string number_text(double v) {
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// Shell-style match: `*` matches any run of characters (also none); everything else literally.
bool glob_match(const std::string& pattern, const std::string& text) {
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// Multiplies the bandwidth of every link a cluster.network.slow_links rule names; a rule naming no link is
// an input error (a typo would otherwise silently do nothing).
void apply_slow_links(TopologyBuilder& b, const Topology& names, const std::vector<spec::SlowLinkSpec>& rules) {
  if (rules.empty()) return;
  std::vector<std::string> name(names.vertex_count());
  for (int v = 0; v < names.vertex_count(); ++v) name[v] = names.vertex_name(v);
  for (size_t r = 0; r < rules.size(); ++r) {
    const spec::SlowLinkSpec& rule = rules[r];
    int matched = 0;
    for (int l = 0; l < b.link_count(); ++l) {
      const Link& k = b.link(l);
      const bool fwd = glob_match(rule.from, name[k.from]) && glob_match(rule.to, name[k.to]);
      const bool rev = rule.both_directions && glob_match(rule.from, name[k.to]) && glob_match(rule.to, name[k.from]);
      if (fwd || rev) {
        b.scale_link(l, rule.scale);
        ++matched;
      }
    }
    if (matched == 0) {
      throw InputError("key cluster.network.slow_links[" + std::to_string(r) + "]: no link from '" + rule.from +
                       "' to '" + rule.to + "' (vertex names look like node0/gpu3, node0/nvswitch, node0/nic3, leaf0, "
                       "spine0; see docs/NETWORK.md)");
    }
  }
}

[[noreturn]] void fail(const std::string& key, const std::string& rule) {
  throw InputError("key cluster." + key + ": " + rule);
}

}  // namespace

const char* name_of(VertexKind k) {
  switch (k) {
    case VertexKind::Gpu: return "gpu";
    case VertexKind::NvSwitch: return "nvswitch";
    case VertexKind::PcieSwitch: return "pcie";
    case VertexKind::Cpu: return "cpu";
    case VertexKind::Nic: return "nic";
    case VertexKind::Leaf: return "leaf";
    case VertexKind::Spine: return "spine";
    case VertexKind::Core: return "core";
    case VertexKind::Optical: return "optical";
    case VertexKind::CircuitSwitch: return "ocs";
  }
  return "?";
}

int Topology::find_link(int from, int to) const {
  for (int32_t l : out_links(from))
    if (links_[l].to == to) return l;
  return -1;
}

int Topology::nvswitch_of_node(int node) const { return nvswitch_of_node_[node]; }
int Topology::nic_of_rank(int rank) const { return nic_of_rank_[rank]; }

std::string Topology::vertex_name(int v) const {
  const Vertex& x = vertices_[v];
  const std::string i = std::to_string(x.index);
  const std::string node = "node" + std::to_string(x.node) + "/";
  switch (x.kind) {
    case VertexKind::Gpu: return node + "gpu" + i;
    case VertexKind::NvSwitch: return node + "nvswitch";
    case VertexKind::PcieSwitch: return node + "pcie" + i;
    case VertexKind::Cpu: return node + "cpu" + i;
    case VertexKind::Nic: return node + "nic" + i;
    case VertexKind::Optical: return node + "optical";
    case VertexKind::CircuitSwitch: return "ocs";
    case VertexKind::Core: return "core" + i;
    case VertexKind::Leaf:
    case VertexKind::Spine: {
      const std::string kind = x.kind == VertexKind::Leaf ? "leaf" : "spine";
      if (x.group < 0) return kind + i;
      const std::string group = fabric_ == spec::Fabric::RailOptimized ? "rail" : "pod";
      return group + std::to_string(x.group) + "/" + kind + i;
    }
  }
  return "?";
}

std::string Topology::link_name(int l) const {
  return vertex_name(links_[l].from) + "->" + vertex_name(links_[l].to);
}

int Topology::find_vertex(const std::string& name) const {
  for (int v = 0; v < vertex_count(); ++v)
    if (vertex_name(v) == name) return v;
  return -1;
}

TopologyBuilder::TopologyBuilder(int num_nodes, int gpus_per_node) {
  t_.num_nodes_ = num_nodes;
  t_.gpus_per_node_ = gpus_per_node;
  const int ranks = num_nodes * gpus_per_node;
  t_.vertices_.reserve(ranks);
  for (int r = 0; r < ranks; ++r) t_.vertices_.push_back({VertexKind::Gpu, r / gpus_per_node, r % gpus_per_node, -1});
  t_.nvswitch_of_node_.assign(num_nodes, -1);
  t_.nic_of_rank_.assign(ranks, -1);
}

int TopologyBuilder::add_vertex(VertexKind kind, int node, int index, int group) {
  if (t_.vertices_.size() >= static_cast<size_t>(kMaxTopologyVertices))
    throw InputError("key cluster.num_gpus: the network graph would have more than " +
                     std::to_string(kMaxTopologyVertices) + " vertices, the flow model's limit");
  t_.vertices_.push_back({kind, node, index, group});
  return static_cast<int>(t_.vertices_.size()) - 1;
}

int TopologyBuilder::add_link(int from, int to, double bandwidth, double latency) {
  if (static_cast<int64_t>(t_.links_.size()) >= kMaxLinks)
    throw InputError("key cluster.num_gpus: the network graph would have more than " + std::to_string(kMaxLinks) +
                     " links, the flow model's limit");
  t_.links_.push_back({from, to, bandwidth, latency});
  return static_cast<int>(t_.links_.size()) - 1;
}

void TopologyBuilder::add_cable(int a, int b, double bandwidth, double latency) {
  add_link(a, b, bandwidth, latency);
  add_link(b, a, bandwidth, latency);
}

Topology TopologyBuilder::finish() {
  const size_t V = t_.vertices_.size(), L = t_.links_.size();
  // Compressed adjacency, links of a vertex in link-id order (counting sort keeps ids ascending).
  auto csr = [&](bool out, std::vector<int32_t>& begin, std::vector<int32_t>& list) {
    begin.assign(V + 1, 0);
    for (const Link& l : t_.links_) ++begin[(out ? l.from : l.to) + 1];
    for (size_t v = 0; v < V; ++v) begin[v + 1] += begin[v];
    list.assign(L, 0);
    std::vector<int32_t> fill(begin.begin(), begin.end() - 1);
    for (size_t l = 0; l < L; ++l) list[fill[out ? t_.links_[l].from : t_.links_[l].to]++] = static_cast<int32_t>(l);
  };
  csr(true, t_.out_begin_, t_.out_);
  csr(false, t_.in_begin_, t_.in_);
  return std::move(t_);
}

Topology build_topology(const spec::ClusterSpec& c) {
  using detail::NetworkParams;
  const spec::NetworkSpec& net = c.network;
  if (c.num_gpus < 1) fail("num_gpus", "must be >= 1, got " + std::to_string(c.num_gpus));
  if (c.gpus_per_node < 1) fail("gpus_per_node", "must be >= 1, got " + std::to_string(c.gpus_per_node));
  NetworkParams p;
  p.net = &net;
  p.fabric = spec::fabric_of(c);
  p.gpus_per_node = std::min(c.gpus_per_node, c.num_gpus);
  if (c.num_gpus % p.gpus_per_node != 0)
    fail("num_gpus", std::to_string(c.num_gpus) + " must be a multiple of cluster.gpus_per_node " +
                         std::to_string(p.gpus_per_node));
  p.nodes = c.num_gpus / p.gpus_per_node;
  p.nics_per_node = net.nics_per_node > 0 ? std::min(net.nics_per_node, p.gpus_per_node) : p.gpus_per_node;
  auto positive = [](double v, const std::string& key) {
    if (!(v > 0) || !std::isfinite(v)) fail(key, "must be > 0, got " + number_text(v));
    return v;
  };
  auto non_negative = [](double v, const std::string& key) {
    if (!(v >= 0) || !std::isfinite(v)) fail(key, "must be >= 0, got " + number_text(v));
    return v;
  };
  p.intra_bw = positive(c.intra_node.bandwidth_GBps, "intra_node.bandwidth_GBps") * 1e9;
  p.intra_lat = non_negative(c.intra_node.latency_us, "intra_node.latency_us") * 1e-6;
  const double inter_bw = positive(c.inter_node.bandwidth_GBps, "inter_node.bandwidth_GBps") * 1e9;
  // A GPU with several NICs of its own (nics_per_node a multiple of the GPUs) gets one link of their total.
  const int nics_per_gpu = std::max(1, net.nics_per_node / p.gpus_per_node);
  p.nic_bw = net.nic_GBps > 0 ? net.nic_GBps * 1e9 * nics_per_gpu : inter_bw * p.gpus_per_node / p.nics_per_node;
  p.nic_lat = non_negative(c.inter_node.latency_us, "inter_node.latency_us") * 1e-6 / 2;
  p.hop_lat = non_negative(net.hop_latency_us, "network.hop_latency_us") * 1e-6;

  if (net.node == spec::NodeFabric::Mesh2d || net.node == spec::NodeFabric::Torus2d) {
    p.node_dims = net.node_dims.empty() ? detail::square_dims(p.gpus_per_node) : net.node_dims;
    if (int64_t{p.node_dims[0]} * p.node_dims[1] != p.gpus_per_node)
      fail("network.node_dims", "x * y must equal cluster.gpus_per_node " + std::to_string(p.gpus_per_node));
  }
  if (p.fabric == spec::Fabric::Mesh2d || p.fabric == spec::Fabric::Torus2d) {
    p.fabric_dims = net.fabric_dims.empty() ? detail::square_dims(p.nodes) : net.fabric_dims;
    if (int64_t{p.fabric_dims[0]} * p.fabric_dims[1] != p.nodes)
      fail("network.fabric_dims", "x * y must equal the number of nodes " + std::to_string(p.nodes));
  }
  const int64_t vertices = int64_t{c.num_gpus} + p.nodes * detail::count_node_vertices(p) + detail::count_fabric_vertices(p);
  if (vertices > kMaxTopologyVertices)
    fail("num_gpus", "the network graph would have " + std::to_string(vertices) + " vertices; the flow model "
                     "supports at most " + std::to_string(kMaxTopologyVertices));

  TopologyBuilder b(p.nodes, p.gpus_per_node);
  b.set_families(net.node, p.fabric);
  b.set_routing(net.routing);
  detail::NodePorts ports;
  for (int n = 0; n < p.nodes; ++n) detail::add_node(b, p, n, ports);
  detail::add_fabric(b, p, ports);
  if (!net.slow_links.empty()) {
    // Names need a finished graph; build one for naming, then scale the builder's links.
    TopologyBuilder copy = b;
    const Topology named = copy.finish();
    apply_slow_links(b, named, net.slow_links);
  }
  return b.finish();
}

}  // namespace stepsim::hw
