#pragma once
// How a context-parallel ring's c steps are built as ops (shared by Transformer Engine's ring and PyTorch's).
#include <algorithm>

namespace stepsim::workload::megatron {

// Ring attention's c steps as built: n ops, step i covering blocks(i) of the c blocks (1 each up to kMaxRingSteps).
// Above kMaxRingSteps ranks, g = ceil(c / kMaxRingSteps) consecutive steps are built as one op (g blocks' work, g
// blocks moved at once): the same bandwidth and overlap, a bounded op count (a 1,024-rank ring would otherwise issue
// 3,000 ops per layer).
inline constexpr int kMaxRingSteps = 16;
struct RingSteps {
  int c = 1, n = 1;
  int blocks(int i) const { return c / n + (i < c % n ? 1 : 0); }
};
inline RingSteps ring_steps(int c) { return RingSteps{c, std::min(c, kMaxRingSteps)}; }

}  // namespace stepsim::workload::megatron
