#include "stepsim/cost/compute/host_issue.hpp"

#include <cmath>
#include <set>
#include <unordered_map>

namespace stepsim::cost {

namespace {

using workload::Op;
using workload::Phase;

// (micro-batch, layer, forward or backward) of a layer op: the group its layer's host time is spread over. Recompute is
// a forward pass the host issues again.
uint64_t group_key(const Op& op) {
  const uint64_t pass = op.phase == Phase::Backward ? 1 : 0;
  return (static_cast<uint64_t>(static_cast<uint32_t>(op.microbatch + 1)) << 32) |
         (static_cast<uint64_t>(static_cast<uint16_t>(op.layer)) << 1) | pass;
}

void assign_program(workload::Program& p, double scale) {
  // MoE layers: those with routed-expert GEMMs.
  std::set<int> moe_layers;
  for (const Op& op : p.ops) {
    if (op.layer >= 0 && op.category == workload::ComputeCategory::GroupedGemm) moe_layers.insert(op.layer);
  }
  std::unordered_map<uint64_t, int> ops_in_group;
  for (const Op& op : p.ops) {
    if (op.layer >= 0 && op.phase != Phase::Optimizer) ++ops_in_group[group_key(op)];
  }
  p.host_prefix.assign(p.ops.size() + 1, 0);
  p.host_syncs.clear();
  for (size_t i = 0; i < p.ops.size(); ++i) {
    Op& op = p.ops[i];
    double us = kHostOtherOpUs;
    if (op.layer >= 0 && op.phase != Phase::Optimizer) {
      const bool moe = moe_layers.count(op.layer) > 0, backward = op.phase == Phase::Backward;
      const double layer_us = moe ? (backward ? kHostMoeLayerBackwardUs : kHostMoeLayerForwardUs)
                                  : (backward ? kHostDenseLayerBackwardUs : kHostDenseLayerForwardUs);
      us = layer_us / ops_in_group[group_key(op)];
    }
    op.host_ns = static_cast<int32_t>(std::llround(us * scale * 1e3));
    if (op.host_sync) {
      op.duration_ns = 0;
      p.host_syncs.push_back(static_cast<uint32_t>(i));
    }
    p.host_prefix[i + 1] = p.host_prefix[i] + op.host_ns;
  }
}

}  // namespace

void assign_host_issue(workload::Workload& w, double scale) {
  for (workload::Program& p : w.programs) {
    if (scale > 0) {
      assign_program(p, scale);
      continue;
    }
    p.host_prefix.clear();
    p.host_syncs.clear();
    for (Op& op : p.ops) op.host_ns = 0;  // host_sync stays: the builder's mark, read only with host_prefix
  }
}

}  // namespace stepsim::cost
