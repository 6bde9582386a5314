#pragma once
// Internal to build_topology: the resolved parameters (SI units) and one builder per family —
// topology_node.cpp builds what is inside a node, topology_fabric.cpp what connects nodes.
#include <cstdint>
#include <vector>

#include "stepsim/topology/topology.hpp"

namespace stepsim::hw::detail {

struct NetworkParams {
  const spec::NetworkSpec* net = nullptr;
  spec::Fabric fabric = spec::Fabric::FatTree;
  int nodes = 1;
  int gpus_per_node = 1;
  int nics_per_node = 1;
  double intra_bw = 0, intra_lat = 0;  // GPU <-> GPU (via one switch or one direct link)
  double nic_bw = 0;                   // one NIC, bytes/s
  double nic_lat = 0;                  // GPU <-> NIC: half of cluster.inter_node.latency_us
  double hop_lat = 0;                  // one fabric link
  std::vector<int> node_dims, fabric_dims;  // resolved {x, y} for mesh/torus families
};

// Where the fabric attaches to node `n`: NIC j of node n (or the node's optical vertex).
struct NodePorts {
  std::vector<int32_t> nic;      // nodes * nics_per_node, node-major; empty for photonic
  std::vector<int32_t> optical;  // per node, photonic only
};

// The GPU that NIC j serves first, and the NIC of local GPU g: NICs are spread evenly over the GPUs.
inline int nic_of_local_gpu(int g, int gpus, int nics) { return static_cast<int>(int64_t{g} * nics / gpus); }

// Vertices the families will add (for the size guard, before anything is allocated).
int64_t count_node_vertices(const NetworkParams& p);
int64_t count_fabric_vertices(const NetworkParams& p);

// Adds node n's switches, CPU sockets and intra-node links, and its NICs (or optical vertex) with their
// attachment links; records them in `ports`.
void add_node(TopologyBuilder& b, const NetworkParams& p, int n, NodePorts& ports);
// Adds the inter-node fabric over the ports of all nodes.
void add_fabric(TopologyBuilder& b, const NetworkParams& p, const NodePorts& ports);

// {x, y} with x * y = n and y the largest divisor <= sqrt(n) (most square).
std::vector<int> square_dims(int n);

}  // namespace stepsim::hw::detail
