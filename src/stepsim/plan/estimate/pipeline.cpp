#include "stepsim/plan/estimate/pipeline.hpp"

#include <algorithm>

namespace stepsim::plan::estimate {

namespace {

int slowest_stage(const std::vector<StageCosts>& st) {
  int slow = 0;
  for (int s = 1; s < static_cast<int>(st.size()); ++s) {
    if (st[s].total() > st[slow].total()) slow = s;
  }
  return slow;
}

// The other stages' passes in the fill and drain, 1 / v of a micro-batch each (less than (p - 1) / v of the slowest's
// when the slowest is the heavy one, as the last stage with the output layer and the loss often is). Under ZeRO-3
// each adds the gathers its first forward and its last backward waited for, not its steady state's average: the fill
// finds its stream empty, and the drain's reduce-scatters run beside the next stage's backward.
double fill_and_drain(const std::vector<StageCosts>& st, int slow, int v) {
  double others = 0;
  for (int s = 0; s < static_cast<int>(st.size()); ++s) {
    if (s != slow) others += (st[s].f.total() + st[s].b.total()) / v + st[s].zero.first_pass_s + st[s].zero.last_pass_s;
  }
  return others;
}

// Each stage boundary's exchange of one activation: boundary b is between stages b and b + 1.
std::vector<double> boundary_exchanges(int p, const workload::RankLayout& layout, const cost::CollectiveModel& comm,
                                       uint64_t act) {
  std::vector<double> xb(p - 1);
  for (int b = 0, r = 0; b + 1 < p; ++b, r = layout.next_stage_rank(r)) {
    const bool same_node = layout.node_of(r) == layout.node_of(layout.next_stage_rank(r));
    xb[b] = static_cast<double>(comm.p2p_ns(act, same_node)) * 1e-9;
  }
  return xb;
}

// Blocking exchanges (1F1B): the fill's forward sends and the drain's backward sends over every boundary, and in the
// steady state each stage's own per forward/backward pair: one combined exchange with each neighbour
// (send-forward-receive-backward with the next, send-backward-receive-forward with the previous), so the pipeline's
// pace is its slowest stage with its exchanges. With the interleaved schedule's overlapped p2p only the fill and
// drain wait.
double pipeline_sends(const std::vector<StageCosts>& st, int v, double m, double t_mb, const std::vector<double>& xb) {
  const int p = static_cast<int>(st.size());
  double fill_drain = 0;
  for (int b = 0; b + 1 < p; ++b) fill_drain += 2.0 * xb[b];
  double pace = 0;
  for (int s = 0; s < p; ++s)
    pace = std::max(pace, st[s].total() + (s > 0 ? xb[s - 1] : 0.0) + (s + 1 < p ? xb[s] : 0.0));
  return v == 1 ? (pace - t_mb) * m + fill_drain : fill_drain;
}

}  // namespace

uint64_t boundary_activation_bytes(const workload::BytesPerParam& bpp, const workload::ModelDims& d) {
  return static_cast<uint64_t>(bpp.weight) * d.tokens_sp * d.h;
}

PipelineTerms pipeline_terms(const std::vector<StageCosts>& st, int virtual_stages, int64_t microbatches,
                             const workload::RankLayout& layout, const cost::CollectiveModel& comm,
                             uint64_t activation_bytes) {
  const int p = static_cast<int>(st.size());
  const double m = static_cast<double>(microbatches);
  PipelineTerms out;
  out.slow = slowest_stage(st);
  const double t_mb = st[out.slow].total();
  out.bubble_s = fill_and_drain(st, out.slow, virtual_stages);
  out.pipe_s = t_mb * m + out.bubble_s;
  if (p > 1) {
    const std::vector<double> xb = boundary_exchanges(p, layout, comm, activation_bytes);
    out.sends_s = pipeline_sends(st, virtual_stages, m, t_mb, xb);
  }
  return out;
}

}  // namespace stepsim::plan::estimate
