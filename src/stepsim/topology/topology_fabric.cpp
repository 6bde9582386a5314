// Between nodes: two-tier fat-tree, three-tier fat-tree with pods, rail-optimized leaves, direct
// node-to-node ring / 2-D mesh / 2-D torus (one plane per NIC index), or a photonic circuit switch.
#include <algorithm>
#include <cmath>
#include <string>

#include "stepsim/topology/topology_families.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::hw::detail {
namespace {

using spec::Fabric;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Leaf up-links: ceil(ports / oversubscription) spines, each leaf-spine link sized so a leaf's up-link
// capacity is exactly its down capacity divided by the oversubscription.
struct Uplinks {
  int spines = 0;
  double bandwidth = 0;
};

Uplinks leaf_uplinks(const NetworkParams& p) {
  const spec::NetworkSpec& n = *p.net;
  Uplinks u;
  u.spines = static_cast<int>(std::clamp<double>(std::ceil(n.leaf_ports / n.oversubscription - 1e-9), 1.0,
                                                 static_cast<double>(n.leaf_ports)));
  u.bandwidth = n.leaf_ports * p.nic_bw / (n.oversubscription * u.spines);
  return u;
}

int64_t leaves_of(const NetworkParams& p) {
  if (p.fabric == Fabric::RailOptimized) return p.nics_per_node * ceil_div(p.nodes, p.net->leaf_ports);
  return ceil_div(int64_t{p.nodes} * p.nics_per_node, p.net->leaf_ports);
}

int64_t pods_of(const NetworkParams& p) {
  const int64_t leaves = leaves_of(p);
  const int64_t pods = p.net->pods > 0 ? p.net->pods : ceil_div(leaves, p.net->leaf_ports);
  if (pods > leaves)
    throw InputError("key cluster.network.pods: must be <= the number of leaf switches " + std::to_string(leaves) +
                     " (nodes x nics_per_node / leaf_ports), got " + std::to_string(pods));
  return pods;
}

// Every leaf joined to every spine.
void join(TopologyBuilder& b, const std::vector<int>& leaves, const std::vector<int>& spines, const Uplinks& u,
          double lat) {
  for (int leaf : leaves)
    for (int s : spines) b.add_cable(leaf, s, u.bandwidth, lat);
}

void fat_tree(TopologyBuilder& b, const NetworkParams& p, const NodePorts& ports) {
  const int lp = p.net->leaf_ports;
  std::vector<int> leaves;
  for (size_t i = 0; i < ports.nic.size(); ++i) {
    if (i % lp == 0) leaves.push_back(b.add_vertex(VertexKind::Leaf, -1, static_cast<int>(leaves.size())));
    b.add_cable(ports.nic[i], leaves.back(), p.nic_bw, p.hop_lat);
  }
  if (leaves.size() < 2) return;
  const Uplinks u = leaf_uplinks(p);
  std::vector<int> spines;
  for (int s = 0; s < u.spines; ++s) spines.push_back(b.add_vertex(VertexKind::Spine, -1, s));
  join(b, leaves, spines, u, p.hop_lat);
}

// Pods of consecutive leaves, each with its own spines; spine s of every pod joins core s (one plane per
// spine index), sized by the pod's down capacity / core_oversubscription.
void fat_tree3(TopologyBuilder& b, const NetworkParams& p, const NodePorts& ports) {
  const int lp = p.net->leaf_ports;
  const int64_t L = leaves_of(p), P = pods_of(p);
  const int64_t per_pod = ceil_div(L, P);
  const Uplinks u = leaf_uplinks(p);
  std::vector<std::vector<int>> pod_leaves(P);
  for (size_t i = 0; i < ports.nic.size(); ++i) {
    const int64_t leaf = static_cast<int64_t>(i) / lp;
    const int64_t pod = leaf / per_pod;
    std::vector<int>& pl = pod_leaves[pod];
    if (static_cast<int64_t>(pl.size()) <= leaf - pod * per_pod)
      pl.push_back(b.add_vertex(VertexKind::Leaf, -1, static_cast<int>(pl.size()), static_cast<int>(pod)));
    b.add_cable(ports.nic[i], pl.back(), p.nic_bw, p.hop_lat);
  }
  if (L < 2) return;
  std::vector<int> cores;
  if (P > 1)
    for (int s = 0; s < u.spines; ++s) cores.push_back(b.add_vertex(VertexKind::Core, -1, s));
  for (int64_t pod = 0; pod < P; ++pod) {
    std::vector<int> spines;
    for (int s = 0; s < u.spines; ++s) spines.push_back(b.add_vertex(VertexKind::Spine, -1, s, static_cast<int>(pod)));
    join(b, pod_leaves[pod], spines, u, p.hop_lat);
    const double up = static_cast<double>(pod_leaves[pod].size()) * u.bandwidth / p.net->core_oversubscription;
    for (size_t s = 0; s < cores.size(); ++s) b.add_cable(spines[s], cores[s], up, p.hop_lat);
  }
}

// NIC j of every node joins rail j's leaf (leaf_ports nodes per leaf); all leaves join the spines.
void rail_optimized(TopologyBuilder& b, const NetworkParams& p, const NodePorts& ports) {
  const int lp = p.net->leaf_ports, nics = p.nics_per_node;
  const int groups = static_cast<int>(ceil_div(p.nodes, lp));
  std::vector<int> leaves;
  for (int r = 0; r < nics; ++r)
    for (int g = 0; g < groups; ++g) leaves.push_back(b.add_vertex(VertexKind::Leaf, -1, g, r));
  for (int n = 0; n < p.nodes; ++n)
    for (int r = 0; r < nics; ++r)
      b.add_cable(ports.nic[static_cast<size_t>(n) * nics + r], leaves[static_cast<size_t>(r) * groups + n / lp], p.nic_bw,
                  p.hop_lat);
  if (leaves.size() < 2) return;
  const Uplinks u = leaf_uplinks(p);
  std::vector<int> spines;
  for (int s = 0; s < u.spines; ++s) spines.push_back(b.add_vertex(VertexKind::Spine, -1, s));
  join(b, leaves, spines, u, p.hop_lat);
}

// Direct node-to-node cables: plane j joins NIC j of neighbouring nodes.
void direct(TopologyBuilder& b, const NetworkParams& p, const NodePorts& ports) {
  const int N = p.nodes, nics = p.nics_per_node;
  auto cable = [&](int a, int c) {
    for (int j = 0; j < nics; ++j)
      b.add_cable(ports.nic[static_cast<size_t>(a) * nics + j], ports.nic[static_cast<size_t>(c) * nics + j], p.nic_bw,
                  p.hop_lat);
  };
  if (p.fabric == Fabric::Ring) {
    if (N == 2) cable(0, 1);
    if (N > 2)
      for (int a = 0; a < N; ++a) cable(a, (a + 1) % N);
    return;
  }
  const int X = p.fabric_dims[0], Y = p.fabric_dims[1];
  const bool torus = p.fabric == Fabric::Torus2d;
  for (int y = 0; y < Y; ++y) {
    for (int x = 0; x < X; ++x) {
      const int a = x + X * y;
      if (x + 1 < X) cable(a, a + 1);
      else if (torus && X > 2) cable(a, X * y);
      if (y + 1 < Y) cable(a, a + X);
      else if (torus && Y > 2) cable(a, x);
    }
  }
}

void photonic(TopologyBuilder& b, const NetworkParams& p, const NodePorts& ports) {
  const spec::PhotonicSpec& s = p.net->photonic;
  PhotonicParams pp;
  pp.enabled = true;
  pp.ports_per_node = s.ports_per_node;
  pp.port_bandwidth = s.port_GBps > 0 ? s.port_GBps * 1e9 : p.nic_bw * p.nics_per_node / s.ports_per_node;
  pp.setup_s = s.setup_us * 1e-6;
  pp.circuit_latency = 2 * p.hop_lat;
  b.set_photonic(pp);
  // The static optical <-> switch links carry no traffic themselves: routes cross them, and the flow model
  // replaces each such crossing pair by the circuit between the two nodes.
  const int ocs = b.add_vertex(VertexKind::CircuitSwitch, -1, 0);
  for (int opt : ports.optical) b.add_cable(opt, ocs, pp.ports_per_node * pp.port_bandwidth, p.hop_lat);
}

}  // namespace

int64_t count_fabric_vertices(const NetworkParams& p) {
  switch (p.fabric) {
    case Fabric::FatTree:
    case Fabric::RailOptimized: {
      const int64_t L = leaves_of(p);
      return L + (L > 1 ? leaf_uplinks(p).spines : 0);
    }
    case Fabric::FatTree3: {
      const int64_t L = leaves_of(p), P = pods_of(p), K = leaf_uplinks(p).spines;
      return L + (L > 1 ? P * K + (P > 1 ? K : 0) : 0);
    }
    case Fabric::Photonic: return 1;
    default: return 0;
  }
}

void add_fabric(TopologyBuilder& b, const NetworkParams& p, const NodePorts& ports) {
  switch (p.fabric) {
    case Fabric::FatTree: fat_tree(b, p, ports); break;
    case Fabric::FatTree3: fat_tree3(b, p, ports); break;
    case Fabric::RailOptimized: rail_optimized(b, p, ports); break;
    case Fabric::Ring:
    case Fabric::Mesh2d:
    case Fabric::Torus2d: direct(b, p, ports); break;
    case Fabric::Photonic: photonic(b, p, ports); break;
  }
}

}  // namespace stepsim::hw::detail
