#include "stepsim/assemble/moe_host_note.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

namespace stepsim::sim {

namespace {

// One stage program's share: its MoE layers' mean forward GPU work per micro-batch and its closed-form host wait.
struct StageHost {
  double forward_us = -1;  // -1: no MoE layer on the stage
  double wait_us = 0;
};

StageHost stage_host(const workload::Program& p, double scale) {
  using workload::Phase;
  StageHost out;
  // The MoE layers are the layers whose forward has the dispatcher's host synchronisation.
  std::set<int> moe_layers;
  for (const workload::Op& op : p.ops) {
    if (op.phase == Phase::Forward && op.layer >= 0 && op.host_sync) moe_layers.insert(op.layer);
  }
  if (moe_layers.empty()) return out;
  std::map<std::pair<int, int>, double> forward_ns;  // (micro-batch, layer) -> forward GPU work
  struct ChunkBackward {
    double gpu_ns = 0;
    std::set<int> layers, recomputed;
  };
  std::map<std::pair<int, int>, ChunkBackward> backward;  // (micro-batch, chunk)
  for (const workload::Op& op : p.ops) {
    // The sync op's own duration is the builder's stall, which the host issue model replaces: not GPU work.
    if (op.kind != workload::OpKind::Compute || !moe_layers.count(op.layer) || op.host_sync) continue;
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
  if (forward_ns.empty()) return out;  // no timed forward work to compare with
  double forward_total_ns = 0;
  for (const auto& [key, ns] : forward_ns) {
    forward_total_ns += ns;
    out.wait_us += std::max(0.0, scale * kMoeLayerForwardHostUs - ns * 1e-3);
  }
  out.forward_us = forward_total_ns * 1e-3 / static_cast<double>(forward_ns.size());
  for (const auto& [key, c] : backward) {
    const double host_us = scale * (static_cast<double>(c.layers.size()) * kMoeLayerBackwardHostUs +
                                    static_cast<double>(c.recomputed.size()) * kMoeLayerForwardHostUs);
    out.wait_us += std::max(0.0, host_us - c.gpu_ns * 1e-3);
  }
  return out;
}

}  // namespace

double host_bound_moe_wait_s(const workload::Workload& w, double scale) {
  double wait_s = 0;
  for (const workload::Program& p : w.programs) wait_s = std::max(wait_s, stage_host(p, scale).wait_us * 1e-6);
  return wait_s;
}

std::optional<HostBoundMoe> host_bound_moe(const workload::Workload& w, double scale) {
  if (w.job.training.cuda_graphs || !w.job.model.moe) return std::nullopt;
  // The stage with the least work per layer decides whether the note is due.
  HostBoundMoe h;
  h.gpu_us_per_layer_forward = -1;
  h.host_time_scale = std::max(0.0, scale);
  for (const workload::Program& p : w.programs) {
    const StageHost s = stage_host(p, 1.0);
    if (s.forward_us < 0) continue;
    if (h.gpu_us_per_layer_forward < 0 || s.forward_us < h.gpu_us_per_layer_forward) h.gpu_us_per_layer_forward = s.forward_us;
  }
  if (h.gpu_us_per_layer_forward < 0 || h.gpu_us_per_layer_forward >= kMoeLayerForwardHostUs) return std::nullopt;
  h.extra_s = h.host_time_scale >= 1 ? 0.0
                                     : std::max(0.0, host_bound_moe_wait_s(w, 1.0) - host_bound_moe_wait_s(w, h.host_time_scale));
  return h;
}

std::string host_bound_moe_note(const HostBoundMoe& h) {
  char buf[1024];
  if (h.host_time_scale > 0) {
    std::snprintf(buf, sizeof buf,
                  "MoE layers: %.2f ms of GPU work per layer forward and micro-batch against %.2f ms of host time (the "
                  "%.1f ms an eager Megatron-Core MoE layer forward took on the measuring H100 host, "
                  "data/measurements/h100-sxm/megatron_host.csv, at host_time_scale %.2f): the step is host-bound and "
                  "timed so by the host issue model; with the measuring machine's host it would take up to %.3f s more "
                  "(the interval's upper end includes it; docs/COST-MODELS.md, \"Host issue model\"). Remedies: a "
                  "larger micro-batch (more GPU work per layer), CUDA graphs where the layers can be captured "
                  "(training.cuda_graphs), the flex (DeepEP) dispatcher's fewer host syncs",
                  h.gpu_us_per_layer_forward * 1e-3, h.host_time_scale * kMoeLayerForwardHostUs * 1e-3,
                  kMoeLayerForwardHostUs * 1e-3, h.host_time_scale, h.extra_s);
  } else {
    std::snprintf(buf, sizeof buf,
                  "MoE layers: %.2f ms of GPU work per layer forward and micro-batch, below the %.1f ms of host time an "
                  "eager Megatron-Core MoE layer took per forward on the measuring H100 host "
                  "(data/measurements/h100-sxm/megatron_host.csv): such a step is likely host-bound and slower than "
                  "predicted (host issue model off: simulation.host_time_scale 0), by up to %.3f s with that host time "
                  "as the floor (the interval's upper end includes it; docs/COST-MODELS.md, \"Host issue model\")",
                  h.gpu_us_per_layer_forward * 1e-3, kMoeLayerForwardHostUs * 1e-3, h.extra_s);
  }
  return std::string(buf);
}

}  // namespace stepsim::sim
