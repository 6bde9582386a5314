#include "stepsim/sim/moe_host_note.hpp"

#include <cstdio>
#include <set>

namespace stepsim::sim {

std::optional<std::string> host_bound_moe_note(const workload::Workload& w) {
  if (w.job.training.cuda_graphs || !w.job.model.moe) return std::nullopt;
  // Per program (one per pipeline stage): the MoE layers are the layers whose forward has the dispatcher's host
  // synchronisation; their forward compute time over their forwards (layer x micro-batch) is the GPU work the host
  // must stay ahead of. The stage with the least work per layer decides.
  double least_us = -1;
  for (const workload::Program& p : w.programs) {
    std::set<int> moe_layers;
    int64_t forwards = 0;
    for (const workload::Op& op : p.ops) {
      if (op.phase == workload::Phase::Forward && op.layer >= 0 && p.name(op) == "moe_host_sync") {
        moe_layers.insert(op.layer);
        ++forwards;
      }
    }
    if (forwards == 0) continue;
    double ns = 0;
    for (const workload::Op& op : p.ops) {
      if (op.kind == workload::OpKind::Compute && op.phase == workload::Phase::Forward && moe_layers.count(op.layer))
        ns += static_cast<double>(op.duration_ns);
    }
    const double us = ns * 1e-3 / static_cast<double>(forwards);
    if (least_us < 0 || us < least_us) least_us = us;
  }
  if (least_us < 0 || least_us >= kMoeLayerForwardHostUs) return std::nullopt;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "MoE layers: %.2f ms of GPU work per layer forward and micro-batch, below the %.1f ms of host time an "
                "eager Megatron-Core MoE layer took per forward on the measuring H100 host "
                "(data/measurements/h100-sxm/megatron_host.csv): such a step is likely host-bound and slower than "
                "predicted (not modelled; docs/COST-MODELS.md, \"Host-bound MoE layers\")",
                least_us * 1e-3, kMoeLayerForwardHostUs * 1e-3);
  return std::string(buf);
}

}  // namespace stepsim::sim
