#pragma once
// The probe's replayed ops summed into per-layer costs (LayerCosts): each op of a costed micro-batch goes to its
// layer's forward or backward part, or to the embedding's ("first") or the head + loss's ("last"); a part keeps its
// kernels' time, the compute stream's waits by kind (probe_waits.hpp), its host issue time, and its split at its
// first host sync; forward ops also leave the activations they store until their backward.
#include <cstddef>

#include "stepsim/plan/plan_estimate.hpp"
#include "stepsim/sim/stream_replay.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::plan::estimate {

// Whether an op outside the decoder layers is the embedding's: built by the embedding unit's pass (Op::unit; the
// reductions and gathers around the unit are not).
bool is_embedding_op(const workload::Op& op);

// Which ops the probe costs: micro-batch `costed_microbatch` (-1: all), and under the combined 1F1B EP overlap only
// those outside the pair (paired_exposure times it).
struct ProbeSelection {
  int costed_microbatch = -1;
  bool skip_combined_pair = false;
};

class ProbeTally {
 public:
  ProbeTally(const workload::Program& prog, const sim::StreamReplay& rp, int layers, ProbeSelection selection);
  void add(size_t i);  // op i, in program order
  // The costs so far, each part without a sync taken as all "before" it.
  LayerCosts finish();
  double stored_total() const { return stored_total_; }  // the activations one micro-batch stores

 private:
  bool costed(const workload::Op& op) const;
  LayerCosts::Part& part_of(const workload::Op& op, bool fwd, bool decoder_layer);
  void add_stored(const workload::Op& op, bool decoder_layer);
  void add_kernel(LayerCosts::Part& part, size_t i, bool fwd);
  void close_sync();

  const workload::Program& prog_;
  const sim::StreamReplay& rp_;
  int layers_;
  ProbeSelection selection_;
  LayerCosts out_;
  double stored_total_ = 0;
  bool before_layers_ = true;  // layer -1 ops before the first layer are the embedding's
  // A part's split at its first host sync, taken once the sync op's own costs are in (before the next op).
  LayerCosts::Part* at_sync_ = nullptr;
};

}  // namespace stepsim::plan::estimate
