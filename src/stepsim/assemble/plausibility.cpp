#include "stepsim/assemble/plausibility.hpp"

#include <cstdio>

#include "stepsim/job/cluster_rates.hpp"

namespace stepsim::sim {

std::vector<std::string> cluster_plausibility_notes(const spec::ClusterSpec& c, const hw::GpuSpec& gpu) {
  std::vector<std::string> notes;
  char buf[512];
  const double per_gpu = spec::inter_node_GBps_per_gpu(c);
  if (c.num_gpus > c.gpus_per_node && per_gpu > kFastestNicGBps) {
    if (c.network.nic_GBps > 0) {
      std::snprintf(buf, sizeof buf,
                    "cluster.network: %d NICs of %.0f Gb/s for %d GPU%s give each GPU %.0f Gb/s, above the 800 Gb/s "
                    "a GPU's fastest NIC (and its PCIe link) carries: nics_per_node or nic_Gbps too high? Simulated "
                    "as written",
                    c.network.nics_per_node, c.network.nic_GBps * 8, c.gpus_per_node, c.gpus_per_node == 1 ? "" : "s",
                    per_gpu * 8);
    } else {
      std::snprintf(buf, sizeof buf,
                    "cluster.inter_node.bandwidth_Gbps %.0f is per GPU, above the fastest NIC a GPU has (800 Gb/s): "
                    "a node's total (divide by its %d GPUs) or GB/s (x 8) given? Simulated as written",
                    c.inter_node.bandwidth_GBps * 8, c.gpus_per_node);
    }
    notes.emplace_back(buf);
  }
  if (gpu.intra_node_GBps > 0 && c.intra_node.bandwidth_GBps > 1.05 * gpu.intra_node_GBps) {
    std::snprintf(buf, sizeof buf,
                  "cluster.intra_node.bandwidth_GBps %.0f is above the %s's own link (%.0f GB/s per direction): "
                  "the bidirectional figure given? Simulated as written",
                  c.intra_node.bandwidth_GBps, gpu.name.c_str(), gpu.intra_node_GBps);
    notes.emplace_back(buf);
  }
  return notes;
}

std::vector<std::string> plausibility_notes(const spec::JobSpec& job, const hw::GpuSpec& gpu) {
  std::vector<std::string> notes = cluster_plausibility_notes(job.cluster, gpu);
  const auto& c = job.cluster;
  char buf[512];
  const auto& p = job.parallelism;
  if (p.tensor > c.gpus_per_node) {
    std::snprintf(buf, sizeof buf,
                  "TP %d spans %d nodes of %d GPUs: its collectives in every layer cross the NICs (Megatron keeps TP "
                  "inside a node, MoFa 4.1 rule 4; stepsim plan never proposes it)",
                  p.tensor, (p.tensor + c.gpus_per_node - 1) / c.gpus_per_node, c.gpus_per_node);
    notes.emplace_back(buf);
  }
  return notes;
}

}  // namespace stepsim::sim
