#pragma once
// Megatron-Core's combined 1F1B step (training.overlap_moe_expert_parallel_comm; combined_1f1b.py and
// TransformerLayerSchedulePlan.run). Both halves are built as usual, each op tagged with its layer slot in its pass and
// the layer sub-module (node) it belongs to; the step's ops are then put in the order Megatron issues the nodes: per
// layer pair, on the compute stream the forward's pre-dispatch part, the backward's experts, the forward's experts, the
// backward's pre-dispatch part, while on the EP stream the backward's combine, the forward's dispatch, the backward's
// dispatch and the forward's combine each run beside the other half's computation.
#include <cstdint>
#include <vector>

#include "stepsim/workload/op.hpp"

namespace stepsim::workload::megatron {

enum class Piece : uint8_t { Pre, Dispatch, Mlp, Combine, Post };

// The order keys of the ops of one combined step, one per op in the order they were built.
class CombinedOrder {
 public:
  // Slot before the layers (forward embedding, then the backward's output layer) and after them (forward output
  // layer, then the backward's embedding), as Megatron's TransformerModelChunkSchedulePlan.run orders pre/post-process.
  static constexpr int kBeforeLayersSlot = -1, kAfterLayersSlot = 1 << 20;

  void begin() {
    keys_.clear();
    active_ = true;
    backward_ = false;
  }
  void begin_backward_half() {
    backward_ = true;
    backward_start_ = keys_.size();
  }
  // Index of the backward half's first op (its keys start again from the smallest).
  size_t backward_start() const { return backward_start_; }
  void end() { active_ = false; }
  // A unit's pass starts: its slot in the pass and the node its first ops belong to.
  void start_unit(int slot, Piece p) {
    slot_ = slot;
    piece_ = p;
  }
  // Sets the node the next ops belong to, only for the pass being built in that direction (a recompute's forward
  // inside the backward keeps the backward's node).
  void node(Phase phase, Piece p, bool backward) {
    if (backward == (phase != Phase::Forward)) piece_ = p;
  }
  void on_op() {
    if (active_) keys_.push_back(key());
  }
  const std::vector<int64_t>& keys() const { return keys_; }

 private:
  static int piece_order(Piece p, bool backward) {
    //                          Pre Dispatch Mlp Combine Post
    static constexpr int fwd[] = {3, 5, 8, 9, 11};
    static constexpr int bwd[] = {10, 7, 4, 2, 1};
    return (backward ? bwd : fwd)[static_cast<int>(p)];
  }
  int64_t key() const {
    const bool edge = slot_ == kBeforeLayersSlot || slot_ == kAfterLayersSlot;
    return int64_t{slot_ + 1} * 16 + (edge ? (backward_ ? 1 : 0) : piece_order(piece_, backward_));
  }
  bool active_ = false, backward_ = false;
  size_t backward_start_ = 0;
  int slot_ = 0;
  Piece piece_ = Piece::Pre;
  std::vector<int64_t> keys_;
};

}  // namespace stepsim::workload::megatron
