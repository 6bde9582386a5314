#pragma once
// NetworkSpec: the optional `cluster.network` section — what the flow-level network model builds its
// topology graph from (hw/topology.hpp). Every key, default and family: docs/NETWORK.md.
// Bandwidths are one direction, GB/s (1e9 B/s); 0 in a field means "derive from cluster.intra_node /
// cluster.inter_node" as documented there.
#include <optional>
#include <string>
#include <vector>

namespace stepsim::spec {

class StrictSection;
struct ClusterSpec;

// How the GPUs of one node connect to each other.
enum class NodeFabric { NvSwitch, Pcie, Ring, Mesh2d, Torus2d };

// How nodes connect to each other.
enum class Fabric { FatTree, FatTree3, RailOptimized, Ring, Mesh2d, Torus2d, Photonic };

// How a route picks among equal-cost next hops: a hash of (source, destination, flow) as Ethernet ECMP does,
// or destination modulo the number of choices as InfiniBand's fat-tree routing (D-mod-K) does.
enum class Routing { Ecmp, DestMod };

// PCIe-only node (no NVLink): GPUs under PCIe switches under CPU sockets; GPU pairs on different sockets
// cross the CPU-CPU link (NCCL's SYS path), as on the NCCL Trace Profiler thesis' A40 node (§5.1.1).
struct PcieSpec {
  int gpus_per_switch = 2;
  double switch_GBps = 24.0;    // GPU <-> PCIe switch (NCCL prints PCI[24.0] for Gen4 x16)
  double cpu_link_GBps = 24.0;  // PCIe switch <-> CPU socket
  double sys_GBps = 16.0;       // CPU socket <-> CPU socket (SYS[16.0])
  int sockets = 2;
};

// Circuit-switched optical fabric (TrioSim §7.1): a node reaches another node over a circuit that must be
// set up first; each node has `ports_per_node` circuit ports.
struct PhotonicSpec {
  int ports_per_node = 8;
  double port_GBps = 0;       // one circuit, one direction; 0 = inter_node bandwidth x gpus_per_node / ports
  double setup_us = 20000.0;  // TrioSim uses 20 ms to establish a link
};

// Makes links slower (or faster): every directed link whose endpoints match `from` and `to` (vertex names
// as docs/NETWORK.md lists them, `*` matches any run of characters) gets its bandwidth multiplied by `scale`.
struct SlowLinkSpec {
  std::string from;
  std::string to;
  double scale = 1.0;
  bool both_directions = true;  // a cable: the reverse link too
};

struct NetworkSpec {
  NodeFabric node = NodeFabric::NvSwitch;
  std::optional<Fabric> fabric;  // nullopt = cluster.inter_node.topology
  int nics_per_node = 0;         // 0 = gpus_per_node (one NIC per GPU)
  double nic_GBps = 0;           // one NIC; 0 = inter_node bandwidth x gpus_per_node / nics_per_node
  double hop_latency_us = 0.1;   // each switch-to-switch / NIC-to-switch / node-to-node link
  // D-mod-K by default: InfiniBand subnet managers route fat-trees deterministically, so the rings NCCL builds
  // do not collide; ecmp (hash collisions) is the what-if for Ethernet/RoCE fabrics.
  Routing routing = Routing::DestMod;
  bool sharp = false;            // the fabric's switches reduce (InfiniBand SHARP): NCCL's CollNet algorithms
  int leaf_ports = 32;           // NIC-facing ports of a leaf (rail) switch
  double oversubscription = 1.0; // leaf down-port capacity / leaf up-link capacity
  int pods = 0;                  // fat-tree-3: 0 = ceil(leaves / leaf_ports)
  double core_oversubscription = 1.0;  // fat-tree-3: pod down capacity / pod up-link capacity
  std::vector<int> node_dims;    // mesh2d / torus2d node: {x, y}, x*y = gpus_per_node; empty = most square
  std::vector<int> fabric_dims;  // mesh2d / torus2d fabric: {x, y}, x*y = nodes; empty = most square
  PcieSpec pcie;
  PhotonicSpec photonic;
  std::vector<SlowLinkSpec> slow_links;
};

const char* name_of(NodeFabric f);
const char* name_of(Fabric f);
const char* name_of(Routing r);

// Reads `cluster.network` (`s` is that section). `c` must already hold the other cluster keys.
NetworkSpec read_network_spec(StrictSection s, const ClusterSpec& c);

// The inter-node fabric in effect: network.fabric, else cluster.inter_node.topology (empty = fat-tree).
// Throws InputError naming cluster.inter_node.topology when that string names no fabric.
Fabric fabric_of(const ClusterSpec& c);

}  // namespace stepsim::spec
