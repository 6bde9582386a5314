#include "stepsim/catalog/transport_rates.hpp"

namespace stepsim::cost {

double transport_bandwidth_efficiency(const NcclProfiles& nccl, const spec::ClusterSpec& c) {
  if (c.inter_node.bandwidth_efficiency > 0) return c.inter_node.bandwidth_efficiency;
  return nccl.transport(c.inter_node.transport).bandwidth_efficiency;
}

spec::ClusterSpec at_transport_rates(const NcclProfiles& nccl, const spec::ClusterSpec& c) {
  spec::ClusterSpec out = c;
  const double e = transport_bandwidth_efficiency(nccl, c);
  out.inter_node.bandwidth_GBps *= e;
  out.network.nic_GBps *= e;  // 0 (no NIC rate given) stays 0
  out.inter_node.bandwidth_efficiency = 1;  // applied: a second call leaves the rates as they are
  return out;
}

spec::ClusterSpec at_achievable_rates(const NcclProfiles& nccl, const hw::GpuSpec& gpu, const spec::ClusterSpec& c) {
  spec::ClusterSpec out = at_transport_rates(nccl, c);
  if (const NcclProfile* p = nccl.lookup(gpu)) {
    out.intra_node.bandwidth_GBps *= p->params.intra_efficiency;
    out.inter_node.bandwidth_GBps *= p->params.inter_efficiency;
    out.network.nic_GBps *= p->params.inter_efficiency;
  }
  return out;
}

std::vector<std::string> transport_notes(const NcclProfiles& nccl, const spec::ClusterSpec& c) {
  const std::string& note = nccl.transport(c.inter_node.transport).note;
  if (note.empty() || c.inter_node.bandwidth_efficiency > 0 || c.num_gpus <= c.gpus_per_node) return {};
  return {"cluster.inter_node.transport " + c.inter_node.transport + ": " + note};
}

}  // namespace stepsim::cost
