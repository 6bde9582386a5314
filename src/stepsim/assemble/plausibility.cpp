#include "stepsim/assemble/plausibility.hpp"

#include <cstdio>

namespace stepsim::sim {

std::vector<std::string> plausibility_notes(const spec::JobSpec& job, const hw::GpuSpec& gpu) {
  std::vector<std::string> notes;
  const auto& c = job.cluster;
  char buf[512];
  if (c.num_gpus > c.gpus_per_node && c.inter_node.bandwidth_GBps > kFastestNicGBps) {
    std::snprintf(buf, sizeof buf,
                  "cluster.inter_node.bandwidth_Gbps %.0f is per GPU, above the fastest NIC a GPU has (800 Gb/s): a "
                  "node's total (divide by its %d GPUs) or GB/s (x 8) given? Simulated as written",
                  c.inter_node.bandwidth_GBps * 8, c.gpus_per_node);
    notes.emplace_back(buf);
  }
  if (gpu.intra_node_GBps > 0 && c.intra_node.bandwidth_GBps > 1.05 * gpu.intra_node_GBps) {
    std::snprintf(buf, sizeof buf,
                  "cluster.intra_node.bandwidth_GBps %.0f is above the %s's own link (%.0f GB/s per direction): "
                  "the bidirectional figure given? Simulated as written",
                  c.intra_node.bandwidth_GBps, gpu.name.c_str(), gpu.intra_node_GBps);
    notes.emplace_back(buf);
  }
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
