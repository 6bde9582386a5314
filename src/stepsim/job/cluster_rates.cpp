#include "stepsim/job/cluster_rates.hpp"

#include <algorithm>
#include <cstdio>

namespace stepsim::spec {

namespace {

int gpus_per_node_used(const ClusterSpec& c) { return std::max(1, std::min(c.gpus_per_node, c.num_gpus)); }

}  // namespace

double inter_node_GBps_per_gpu(const ClusterSpec& c) {
  if (c.network.nic_GBps <= 0) return c.inter_node.bandwidth_GBps;
  return c.network.nic_GBps * nics_per_node(c) / gpus_per_node_used(c);
}

int nics_per_node(const ClusterSpec& c) {
  return c.network.nics_per_node > 0 ? c.network.nics_per_node : gpus_per_node_used(c);
}

double one_nic_GBps(const ClusterSpec& c) {
  if (c.network.nic_GBps > 0) return c.network.nic_GBps;
  return inter_node_GBps_per_gpu(c) * gpus_per_node_used(c) / nics_per_node(c);
}

std::string inter_node_text(const ClusterSpec& c, double efficiency) {
  const auto gbits = [](double GBps) {
    char b[32];
    std::snprintf(b, sizeof b, "%g Gb/s", 8 * GBps);
    return std::string(b);
  };
  const double line = inter_node_GBps_per_gpu(c);
  std::string s = gbits(line) + " per GPU";
  const NetworkSpec& n = c.network;
  if (n.nics_per_node > 0 || n.nic_GBps > 0) {
    // A multi-host NVLink domain is one node to the models; its NICs are counted per host, as the user wrote them.
    const int gpus = gpus_per_node_used(c);
    const int host = c.nvlink_domain > 0 && c.host_gpus > 0 ? c.host_gpus : gpus;
    s += " (" + std::to_string(static_cast<int64_t>(nics_per_node(c)) * host / gpus) + " NICs of " +
         gbits(one_nic_GBps(c)) + " per node)";
  } else {
    s += " (one NIC per GPU)";
  }
  s += " over " + c.inter_node.transport;
  if (efficiency != 1) {
    char b[32];
    std::snprintf(b, sizeof b, " at %g of line rate (", efficiency);
    s += b + gbits(line * efficiency) + ")";
  }
  return s;
}

std::vector<std::string> flow_only_network_keys(const ClusterSpec& c) {
  const NetworkSpec& n = c.network;
  const NetworkSpec d;
  std::vector<std::string> keys;
  const auto add = [&](bool set, const char* key) {
    if (set) keys.push_back(key);
  };
  const bool default_topology = c.inter_node.topology == ClusterSpec{}.inter_node.topology;
  add(!default_topology, "inter_node.topology");
  add(n.node != d.node, "network.node");
  add(n.fabric.has_value() && *n.fabric != Fabric::FatTree && default_topology, "network.fabric");
  add(n.hop_latency_us != d.hop_latency_us, "network.hop_latency_us");
  add(n.routing != d.routing, "network.routing");
  add(n.leaf_ports != d.leaf_ports, "network.leaf_ports");
  add(n.oversubscription != d.oversubscription, "network.oversubscription");
  add(n.pods != d.pods, "network.pods");
  add(n.core_oversubscription != d.core_oversubscription, "network.core_oversubscription");
  add(!n.node_dims.empty(), "network.node_dims");
  add(!n.fabric_dims.empty(), "network.fabric_dims");
  add(!n.slow_links.empty(), "network.slow_links");
  return keys;
}

std::vector<std::string> unused_network_notes(const ClusterSpec& c, CommModel m) {
  std::vector<std::string> notes;
  const std::vector<std::string> keys = m == CommModel::Flow ? std::vector<std::string>{} : flow_only_network_keys(c);
  if (!keys.empty()) {
    std::string list;
    for (const std::string& k : keys) list += (list.empty() ? "cluster." : ", cluster.") + k;
    notes.push_back(list + ": the fabric's graph, used by the flow model only (simulation.comm_model: flow, comm "
                           "--model flow); the " + name_of(m) + " model does not use " +
                    (keys.size() == 1 ? "it" : "them"));
  }
  const ClusterSpec d;
  std::string latency;
  if (c.intra_node.latency_us != d.intra_node.latency_us) latency = "cluster.intra_node.latency_us";
  if (c.inter_node.latency_us != d.inter_node.latency_us) {
    latency += (latency.empty() ? "" : ", ") + std::string("cluster.inter_node.latency_us");
  }
  if (!c.nccl_env.empty() && m != CommModel::Nccl) {
    notes.push_back("cluster.nccl_env (" + nccl_env_text(c.nccl_env) + "): NCCL's own choices, used by the nccl model "
                    "only (simulation.comm_model: nccl, comm --model nccl); the " + name_of(m) +
                    " model does not use it");
  }
  if (m == CommModel::Nccl && !c.nccl_env.unmodelled.empty()) {
    std::string list;
    for (const std::string& v : c.nccl_env.unmodelled) list += (list.empty() ? "" : ", ") + v;
    notes.push_back("cluster.nccl_env: " + list + " read; the nccl model times nothing " +
                    (c.nccl_env.unmodelled.size() == 1 ? "it changes" : "they change") + " (it models NCCL_ALGO, "
                    "NCCL_PROTO, NCCL_MIN/MAX_NCHANNELS, NCCL_NVLS_ENABLE, NCCL_BUFFSIZE)");
  }
  if (m == CommModel::Nccl && !latency.empty()) {
    notes.push_back(latency + ": the nccl model times latency with NCCL's own constants (data/nccl.yaml, scaled by "
                              "inter_node.transport), not these; the alpha-beta and flow models use them");
  }
  return notes;
}

}  // namespace stepsim::spec
