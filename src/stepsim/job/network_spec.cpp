#include "stepsim/job/network_spec.hpp"

#include <sstream>
#include <string>

#include "stepsim/io/input_error.hpp"
#include "stepsim/job/job_spec.hpp"
#include "stepsim/io/yaml_reader.hpp"

namespace stepsim::spec {
namespace {

constexpr double kMaxGBps = 1e9;

std::string num(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

const std::vector<std::pair<std::string, NodeFabric>>& node_choices() {
  static const std::vector<std::pair<std::string, NodeFabric>> v = {
      {"nvswitch", NodeFabric::NvSwitch}, {"pcie", NodeFabric::Pcie},       {"ring", NodeFabric::Ring},
      {"mesh2d", NodeFabric::Mesh2d},     {"torus2d", NodeFabric::Torus2d}};
  return v;
}

const std::vector<std::pair<std::string, Fabric>>& fabric_choices() {
  static const std::vector<std::pair<std::string, Fabric>> v = {
      {"fat-tree", Fabric::FatTree}, {"fat-tree-3", Fabric::FatTree3}, {"rail-optimized", Fabric::RailOptimized},
      {"ring", Fabric::Ring},        {"mesh2d", Fabric::Mesh2d},       {"torus2d", Fabric::Torus2d},
      {"photonic", Fabric::Photonic}};
  return v;
}

// A bandwidth given in GB/s (`<base>_GBps`) or Gb/s (`<base>_Gbps`); `def` when neither is there.
double read_bandwidth(StrictSection& s, const std::string& base, double def) {
  const std::string gbytes = base + "_GBps", gbits = base + "_Gbps";
  if (s.has(gbytes) && s.has(gbits)) s.fail(gbits, "give " + gbits + " (bits) or " + gbytes + " (bytes), not both");
  if (s.has(gbits)) {
    s.mark(gbytes);
    return s.get_double(gbits, 0, 1e-6, kMaxGBps * 8) / 8.0;
  }
  s.mark(gbits);
  return s.get_double(gbytes, def, 1e-6, kMaxGBps);
}

// Exactly two positive integers {x, y}; empty when absent.
std::vector<int> read_dims(StrictSection& s, const std::string& key) {
  const std::vector<int64_t> v = s.get_int_list(key, 1, 1 << 20);
  if (v.empty()) return {};
  if (v.size() != 2) s.fail(key, "must be [x, y] (two integers), got " + std::to_string(v.size()) + " entries");
  return {static_cast<int>(v[0]), static_cast<int>(v[1])};
}

PcieSpec read_pcie(StrictSection s) {
  PcieSpec p;
  p.gpus_per_switch = static_cast<int>(s.get_int("gpus_per_switch", p.gpus_per_switch, 1, 1 << 16));
  p.switch_GBps = s.get_double("switch_GBps", p.switch_GBps, 1e-6, kMaxGBps);
  p.cpu_link_GBps = s.get_double("cpu_link_GBps", p.cpu_link_GBps, 1e-6, kMaxGBps);
  p.sys_GBps = s.get_double("sys_GBps", p.sys_GBps, 1e-6, kMaxGBps);
  p.sockets = static_cast<int>(s.get_int("sockets", p.sockets, 1, 64));
  s.finish();
  return p;
}

PhotonicSpec read_photonic(StrictSection s) {
  PhotonicSpec p;
  p.ports_per_node = static_cast<int>(s.get_int("ports_per_node", p.ports_per_node, 1, 4096));
  p.port_GBps = read_bandwidth(s, "port", 0);
  p.setup_us = s.get_double("setup_us", p.setup_us, 0.0, 1e9);
  s.finish();
  return p;
}

std::vector<SlowLinkSpec> read_slow_links(StrictSection& parent) {
  std::vector<SlowLinkSpec> out;
  const YAML::Node list = parent.child("slow_links");
  if (!list || list.IsNull()) return out;
  if (!list.IsSequence()) parent.fail("slow_links", "must be a list of {from, to, scale}");
  if (list.size() > 100000) parent.fail("slow_links", "has more than 100000 entries");
  for (size_t i = 0; i < list.size(); ++i) {
    StrictSection s(list[i], parent.key_path("slow_links") + "[" + std::to_string(i) + "]", parent.source());
    SlowLinkSpec l;
    if (!s.has("from")) s.fail("from", "is required (a vertex name such as node0/gpu3)");
    if (!s.has("to")) s.fail("to", "is required (a vertex name such as node0/nvswitch)");
    if (!s.has("scale")) s.fail("scale", "is required (bandwidth factor, 0.25 = four times slower)");
    l.from = s.get_string("from", "");
    l.to = s.get_string("to", "");
    l.scale = s.get_double("scale", 1.0, 1e-6, 1e6);
    l.both_directions = s.get_bool("both_directions", true);
    s.finish();
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace

const char* name_of(Routing r) { return r == Routing::Ecmp ? "ecmp" : "d-mod-k"; }

const char* name_of(NodeFabric f) {
  for (const auto& [name, v] : node_choices())
    if (v == f) return name.c_str();
  return "?";
}

const char* name_of(Fabric f) {
  for (const auto& [name, v] : fabric_choices())
    if (v == f) return name.c_str();
  return "?";
}

namespace {

// The fabric an inter_node.topology string names (empty = fat-tree).
Fabric fabric_named(const std::string& t) {
  if (t.empty()) return Fabric::FatTree;
  std::string allowed;
  for (const auto& [name, v] : fabric_choices()) {
    if (t == name) return v;
    allowed += (allowed.empty() ? "" : " | ") + name;
  }
  throw InputError("key cluster.inter_node.topology: must be one of " + allowed + " for the flow network model, got '" +
                   t + "'");
}

}  // namespace

Fabric fabric_of(const ClusterSpec& c) {
  return c.network.fabric ? *c.network.fabric : fabric_named(c.inter_node.topology);
}

NetworkSpec read_network_spec(StrictSection s, const ClusterSpec& c) {
  NetworkSpec n;
  n.node = s.get_enum<NodeFabric>("node", n.node, node_choices());
  if (s.has("fabric")) n.fabric = s.get_enum<Fabric>("fabric", Fabric::FatTree, fabric_choices());
  else s.mark("fabric");
  n.nics_per_node = static_cast<int>(s.get_int("nics_per_node", 0, 1, 1 << 16));
  n.nic_GBps = read_bandwidth(s, "nic", 0);
  n.hop_latency_us = s.get_double("hop_latency_us", n.hop_latency_us, 0.0, 1e7);
  n.routing = s.get_enum<Routing>("routing", n.routing, {{"ecmp", Routing::Ecmp}, {"d-mod-k", Routing::DestMod}});
  n.sharp = s.get_bool("sharp", false);
  n.leaf_ports = static_cast<int>(s.get_int("leaf_ports", n.leaf_ports, 1, 1 << 16));
  if (s.has("oversubscription")) {
    n.oversubscription = s.get_double("oversubscription", 1.0, -1e300, 1e300);
    if (!(n.oversubscription >= 1.0) || n.oversubscription > 1e6)
      s.fail("oversubscription", "must be >= 1, got " + num(n.oversubscription) +
                                     " (leaf down-link capacity / up-link capacity, at most 1e6)");
  } else {
    s.mark("oversubscription");
  }
  n.pods = static_cast<int>(s.get_int("pods", 0, 1, 1 << 20));
  if (s.has("core_oversubscription")) {
    n.core_oversubscription = s.get_double("core_oversubscription", 1.0, -1e300, 1e300);
    if (!(n.core_oversubscription >= 1.0) || n.core_oversubscription > 1e6)
      s.fail("core_oversubscription", "must be >= 1, got " + num(n.core_oversubscription) + " (at most 1e6)");
  } else {
    s.mark("core_oversubscription");
  }
  n.node_dims = read_dims(s, "node_dims");
  n.fabric_dims = read_dims(s, "fabric_dims");
  n.pcie = read_pcie(StrictSection(s.child("pcie"), s.key_path("pcie"), s.source()));
  n.photonic = read_photonic(StrictSection(s.child("photonic"), s.key_path("photonic"), s.source()));
  n.slow_links = read_slow_links(s);
  s.finish();
  // Cross-key rules that need only this section and gpus_per_node; the rest (dims against the node count,
  // slow-link names) are checked when the topology is built.
  // (A cluster smaller than one node gets gpus_per_node clamped later by load_cluster: skip the check then.)
  // More NICs than GPUs (AWS p5: 32 EFA NICs for 8 GPUs) gives each GPU its own nics / gpus of them.
  if (c.num_gpus >= c.gpus_per_node && n.nics_per_node > c.gpus_per_node && n.nics_per_node % c.gpus_per_node != 0)
    s.fail("nics_per_node", "more NICs than cluster.gpus_per_node " + std::to_string(c.gpus_per_node) +
                                " must be a multiple of it (each GPU its own NICs), got " +
                                std::to_string(n.nics_per_node));
  if (c.num_gpus >= c.gpus_per_node && !n.node_dims.empty() && n.node_dims[0] * static_cast<int64_t>(n.node_dims[1]) != c.gpus_per_node)
    s.fail("node_dims", "x * y must equal cluster.gpus_per_node " + std::to_string(c.gpus_per_node));
  if (!n.fabric) n.fabric = fabric_named(c.inter_node.topology);  // checked here, with the section
  return n;
}

}  // namespace stepsim::spec
