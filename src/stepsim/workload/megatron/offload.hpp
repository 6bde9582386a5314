#pragma once
// Transformer Engine's CPU activation offload as Megatron-LM drives it (--cpu-offloading-num-layers N; TE 2.10's
// cpu_offload.py): the saved activations of layers 0..N-1 are copied to the host on one copy stream while the next
// layers compute, and freed on the GPU once copied; layer i's copy must be done before the forward of layer L-N+i, so
// at most L-N layers' activations are on the GPU. In backward, layer i's reload starts when the backward of layer
// L-1-N+i begins (L-1-N layers ahead) and its backward waits for it. MoFa eq. 33-35 with the per-layer overlap made
// explicit. Only on a single pipeline stage (validate() refuses PP > 1, as Megatron does): layer = unit.
#include <unordered_map>

#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

// Bytes each (micro-batch, unit) stored in its forward, until its backward releases them.
class SavedActivations {
 public:
  void store(int microbatch, int unit, int64_t bytes) { bytes_[key(microbatch, unit)] = bytes; }
  int64_t peek(int microbatch, int unit) const;
  int64_t take(int microbatch, int unit);
  static int64_t key(int microbatch, int unit);

 private:
  std::unordered_map<int64_t, int64_t> bytes_;
};

class ActivationOffload {
 public:
  // Before a layer's forward: the copy out of the layer it replaces on the GPU must be done.
  void before_forward(Emitter& em, const Context& cx, int unit);
  // After an offloaded layer's forward: its activations copied to the host and freed.
  void after_forward(Emitter& em, const Context& cx, int unit);
  // Before a unit's backward: the reload of the layer far enough ahead starts; an offloaded layer waits for its own.
  void before_backward(Emitter& em, const Context& cx, int unit, const SavedActivations& saved);

 private:
  std::unordered_map<int64_t, Ref> copy_;  // (micro-batch, layer) -> its activation copy to the host / back
};

}  // namespace stepsim::workload::megatron
