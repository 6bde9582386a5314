#pragma once
// New kernel times for a per-GPU batch and tensor-parallel shard different from the trace's: each kernel of an
// execution-trace op is scaled by the factor the op type's fitted line gives between the op's measured and its
// resized (FLOPs, bytes) (OpRegression::scale). Kernels without an ET node or shapes keep their time.
#include <cstdint>
#include <set>
#include <vector>

#include "stepsim/ingest/extrapolate/op_features.hpp"
#include "stepsim/ingest/extrapolate/op_regression.hpp"
#include "stepsim/ingest/extrapolate/source_step.hpp"

namespace stepsim::extrapolate {

// The regression's samples: one per linked execution-trace node with shapes, its kernels' times summed.
std::vector<OpSample> samples_of(const SourceStep& s);

struct Resized {
  std::vector<int64_t> duration_ns;  // per SourceStep op
  int rescaled = 0;                  // kernels whose time changed
  int kept = 0;                      // kernels that could not be resized (no ET node or shapes) and keep their time
};

// `split_layers`: layer-op nodes split `tp` ways; a kernel of such a layer (forward or backward) is split when it
// is a matmul, convolution or embedding op (the elementwise ops around it stay whole).
Resized resize_ops(const SourceStep& s, const OpRegression& reg, const Resize& batch, int tp,
                   const std::set<int>& split_layers);

}  // namespace stepsim::extrapolate
