#include "stepsim/sim/moe_host_note.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

namespace stepsim::sim {

namespace {

// One stage program's share: its MoE layers' least forward GPU work per micro-batch and its host-bound wait.
struct StageHost {
  double least_forward_us = -1;  // -1: no MoE layer on the stage
  double wait_us = 0;
};

StageHost stage_host(const workload::Program& p) {
  using workload::Phase;
  StageHost out;
  // The MoE layers are the layers whose forward has the dispatcher's host synchronisation.
  std::set<int> moe_layers;
  for (const workload::Op& op : p.ops) {
    if (op.phase == Phase::Forward && op.layer >= 0 && p.name(op) == "moe_host_sync") moe_layers.insert(op.layer);
  }
  if (moe_layers.empty()) return out;
  std::map<std::pair<int, int>, double> forward_ns;  // (micro-batch, layer) -> forward GPU work
  struct ChunkBackward {
    double gpu_ns = 0;
    std::set<int> layers, recomputed;
  };
  std::map<std::pair<int, int>, ChunkBackward> backward;  // (micro-batch, chunk)
  for (const workload::Op& op : p.ops) {
    if (op.kind != workload::OpKind::Compute || !moe_layers.count(op.layer)) continue;
    const double ns = static_cast<double>(op.duration_ns);
    if (op.phase == Phase::Forward) {
      forward_ns[{op.microbatch, op.layer}] += ns;
    } else if (op.phase == Phase::Backward || op.phase == Phase::Recompute) {
      ChunkBackward& c = backward[{op.microbatch, op.chunk}];
      c.gpu_ns += ns;
      c.layers.insert(op.layer);
      if (op.phase == Phase::Recompute) c.recomputed.insert(op.layer);
    }
  }
  double forward_total_ns = 0;
  for (const auto& [key, ns] : forward_ns) {
    forward_total_ns += ns;
    out.wait_us += std::max(0.0, kMoeLayerForwardHostUs - ns * 1e-3);
  }
  out.least_forward_us = forward_total_ns * 1e-3 / static_cast<double>(forward_ns.size());
  for (const auto& [key, c] : backward) {
    const double host_us = static_cast<double>(c.layers.size()) * kMoeLayerBackwardHostUs +
                           static_cast<double>(c.recomputed.size()) * kMoeLayerForwardHostUs;
    out.wait_us += std::max(0.0, host_us - c.gpu_ns * 1e-3);
  }
  return out;
}

}  // namespace

std::optional<HostBoundMoe> host_bound_moe(const workload::Workload& w) {
  if (w.job.training.cuda_graphs || !w.job.model.moe) return std::nullopt;
  // The stage with the least work per layer decides whether the note is due; the one that waits most, the step.
  HostBoundMoe h;
  h.gpu_us_per_layer_forward = -1;
  for (const workload::Program& p : w.programs) {
    const StageHost s = stage_host(p);
    if (s.least_forward_us < 0) continue;
    if (h.gpu_us_per_layer_forward < 0 || s.least_forward_us < h.gpu_us_per_layer_forward)
      h.gpu_us_per_layer_forward = s.least_forward_us;
    h.extra_s = std::max(h.extra_s, s.wait_us * 1e-6);
  }
  if (h.gpu_us_per_layer_forward < 0 || h.gpu_us_per_layer_forward >= kMoeLayerForwardHostUs) return std::nullopt;
  return h;
}

std::string host_bound_moe_note(const HostBoundMoe& h) {
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "MoE layers: %.2f ms of GPU work per layer forward and micro-batch, below the %.1f ms of host time an "
                "eager Megatron-Core MoE layer took per forward on the measuring H100 host "
                "(data/measurements/h100-sxm/megatron_host.csv): such a step is likely host-bound and slower than "
                "predicted, by up to %.3f s with that host time as the floor (not in the step time; the interval's "
                "upper end includes it; docs/COST-MODELS.md, \"Host-bound MoE layers\")",
                h.gpu_us_per_layer_forward * 1e-3, kMoeLayerForwardHostUs * 1e-3, h.extra_s);
  return std::string(buf);
}

std::optional<std::string> host_bound_moe_note(const workload::Workload& w) {
  const std::optional<HostBoundMoe> h = host_bound_moe(w);
  if (!h) return std::nullopt;
  return host_bound_moe_note(*h);
}

}  // namespace stepsim::sim
