#include "stepsim/plan/estimate/probe_waits.hpp"

#include <algorithm>

namespace stepsim::plan::estimate {

using workload::GroupKind;
using workload::Op;
using workload::OpKind;
using workload::Stream;

namespace {

// Where a wait for a TP or CP collective is charged in a part (expert TP counts as TP, both levels of hierarchical CP
// as CP); null for the other groups.
double* tp_or_cp_wait(LayerCosts::Part& part, GroupKind group) {
  switch (group) {
    case GroupKind::Tp:
    case GroupKind::Etp: return &part.tp_s;
    case GroupKind::Cp:
    case GroupKind::HcpA2a:
    case GroupKind::HcpRing: return &part.cp_s;
    default: return nullptr;
  }
}

}  // namespace

void charge_compute_wait(LayerCosts::Part& part, const workload::Program& prog, int blocker, double idle,
                         bool host_copies) {
  if (blocker == sim::kHostBlocker) {
    part.host_s += idle;
    return;
  }
  const Op& waited = prog.ops[static_cast<size_t>(blocker)];
  if (waited.stream == Stream::Ep) {
    // The EP stream: its all-to-alls, and under the combined 1F1B overlap the combine node's computation on it.
    part.ep_s += idle;
  } else if (waited.kind == OpKind::Compute && waited.stream != Stream::Compute) {
    if (!host_copies) return;
    // A host copy: that much of the copy is exposed (charged as the layer's time).
    part.compute_s += idle;
  } else if (waited.kind == OpKind::Collective) {
    if (waited.group == GroupKind::Ep) {
      part.ep_s += idle;
    } else if (double* w = tp_or_cp_wait(part, waited.group)) {
      *w += idle;
    }
  }
}

bool in_combined_pair(const Op& op) {
  return (op.microbatch == 1 && op.phase == workload::Phase::Forward) ||
         (op.microbatch == 0 && op.phase != workload::Phase::Forward);
}

std::vector<LayerCosts::Part> paired_exposure(const workload::Program& prog, const sim::StreamReplay& rp, int layers) {
  std::vector<LayerCosts::Part> out(layers);
  for (size_t i = 0; i < prog.ops.size(); ++i) {
    const Op& op = prog.ops[i];
    if (!in_combined_pair(op) || op.kind != OpKind::Compute || op.stream != Stream::Compute) continue;
    if (op.layer < 0 || op.layer >= layers || rp.blocker[i] == sim::kStreamBlocker) continue;
    // Within a pair a host copy's wait is not charged (the pair's exposure is its EP time and what blocks it).
    charge_compute_wait(out[op.layer], prog, rp.blocker[i], std::max(0.0, rp.start_s[i] - rp.prev_free_s[i]), false);
  }
  return out;
}

}  // namespace stepsim::plan::estimate
