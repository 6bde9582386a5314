// Inside a node: NVSwitch, PCIe tree with CPU sockets (NUMA), or GPU-to-GPU ring / 2-D mesh / 2-D torus;
// then the NICs (or the photonic interface) and their attachment links.
#include <algorithm>
#include <cmath>

#include "stepsim/topology/topology_families.hpp"

namespace stepsim::hw::detail {
namespace {

using spec::NodeFabric;

int pcie_switches(const NetworkParams& p) {
  return (p.gpus_per_node + p.net->pcie.gpus_per_switch - 1) / p.net->pcie.gpus_per_switch;
}

// Direct GPU-GPU cables of a ring / mesh / torus over the node's GPUs (first = local 0).
void add_direct(TopologyBuilder& b, const NetworkParams& p, int first) {
  const int k = p.gpus_per_node;
  const double bw = p.intra_bw, lat = p.intra_lat;
  if (p.net->node == NodeFabric::Ring) {
    if (k == 2) b.add_cable(first, first + 1, bw, lat);
    if (k > 2)
      for (int g = 0; g < k; ++g) b.add_cable(first + g, first + (g + 1) % k, bw, lat);
    return;
  }
  const int X = p.node_dims[0], Y = p.node_dims[1];
  const bool torus = p.net->node == NodeFabric::Torus2d;
  for (int y = 0; y < Y; ++y) {
    for (int x = 0; x < X; ++x) {
      const int g = first + x + X * y;
      // +x and +y neighbours; a torus wraps when the dimension has more than two GPUs (two would duplicate).
      if (x + 1 < X) b.add_cable(g, g + 1, bw, lat);
      else if (torus && X > 2) b.add_cable(g, first + X * y, bw, lat);
      if (y + 1 < Y) b.add_cable(g, g + X, bw, lat);
      else if (torus && Y > 2) b.add_cable(g, first + x, bw, lat);
    }
  }
}

}  // namespace

std::vector<int> square_dims(int n) {
  int y = static_cast<int>(std::sqrt(static_cast<double>(n)));
  while (y > 1 && n % y != 0) --y;
  y = std::max(y, 1);
  return {n / y, y};
}

int64_t count_node_vertices(const NetworkParams& p) {
  int64_t v = 0;
  switch (p.net->node) {
    case NodeFabric::NvSwitch: v = 1; break;
    case NodeFabric::Pcie: v = pcie_switches(p) + p.net->pcie.sockets; break;
    default: break;
  }
  return v + (p.fabric == spec::Fabric::Photonic ? 1 : p.nics_per_node);
}

void add_node(TopologyBuilder& b, const NetworkParams& p, int n, NodePorts& ports) {
  const int k = p.gpus_per_node;
  const int first = n * k;
  std::vector<int> pcie;  // PCIe switch vertices (PCIe nodes)
  switch (p.net->node) {
    case NodeFabric::NvSwitch: {
      // One logical switch stands for the node's NVSwitch chips: any GPU pair at full NVLink rate.
      const int sw = b.add_vertex(VertexKind::NvSwitch, n, 0);
      b.set_nvswitch(n, sw);
      for (int g = 0; g < k; ++g) b.add_cable(first + g, sw, p.intra_bw, p.intra_lat / 2);
      break;
    }
    case NodeFabric::Pcie: {
      const spec::PcieSpec& c = p.net->pcie;
      const int nsw = pcie_switches(p);
      std::vector<int> cpu;
      for (int s = 0; s < c.sockets; ++s) cpu.push_back(b.add_vertex(VertexKind::Cpu, n, s));
      // Sockets pairwise joined by the SYS link (inter-socket fabric).
      for (int s = 0; s < c.sockets; ++s)
        for (int t = s + 1; t < c.sockets; ++t) b.add_cable(cpu[s], cpu[t], c.sys_GBps * 1e9, p.intra_lat / 2);
      for (int i = 0; i < nsw; ++i) {
        pcie.push_back(b.add_vertex(VertexKind::PcieSwitch, n, i));
        const int socket = static_cast<int>(int64_t{i} * c.sockets / nsw);  // switches spread over sockets
        b.add_cable(pcie[i], cpu[socket], c.cpu_link_GBps * 1e9, p.intra_lat / 2);
      }
      for (int g = 0; g < k; ++g) b.add_cable(first + g, pcie[g / c.gpus_per_switch], c.switch_GBps * 1e9, p.intra_lat / 2);
      break;
    }
    case NodeFabric::Ring:
    case NodeFabric::Mesh2d:
    case NodeFabric::Torus2d: add_direct(b, p, first); break;
  }

  if (p.fabric == spec::Fabric::Photonic) {
    // Each GPU reaches the node's photonic interface at its share of the node's NIC bandwidth.
    const int opt = b.add_vertex(VertexKind::Optical, n, 0);
    ports.optical.push_back(opt);
    for (int g = 0; g < k; ++g) b.add_cable(first + g, opt, p.nic_bw * p.nics_per_node / k, p.nic_lat);
    return;
  }
  // NIC j serves GPUs g with nic_of_local_gpu(g) == j. On PCIe nodes a NIC hangs off the PCIe switch of the
  // first GPU it serves (GPUDirect RDMA through that switch); elsewhere each GPU has its own PCIe path to it.
  const int nics = p.nics_per_node;
  std::vector<int> nic(nics);
  for (int j = 0; j < nics; ++j) {
    nic[j] = b.add_vertex(VertexKind::Nic, n, j);
    ports.nic.push_back(nic[j]);
  }
  for (int g = 0; g < k; ++g) {
    const int j = nic_of_local_gpu(g, k, nics);
    b.set_nic(first + g, nic[j]);
    if (p.net->node != NodeFabric::Pcie) b.add_cable(first + g, nic[j], p.nic_bw, p.nic_lat);
  }
  if (p.net->node == NodeFabric::Pcie) {
    for (int j = 0; j < nics; ++j) {
      const int g = static_cast<int>((int64_t{j} * k + nics - 1) / nics);  // first GPU of NIC j
      b.add_cable(nic[j], pcie[g / p.net->pcie.gpus_per_switch], p.net->pcie.switch_GBps * 1e9, p.nic_lat);
    }
  }
}

}  // namespace stepsim::hw::detail
