#pragma once
// Tensor parallelism on a traced step (TrioSim §4.3, with Megatron-LM's layouts): linear, convolution and
// embedding layers are split `tp` ways and the collectives that put their outputs back together are added.
// Two consecutive linear layers whose activation flows from one to the next unchanged in size form Megatron's
// column/row pair (forward: all-reduce of the row layer's output; backward: all-reduce of the column layer's input
// gradient); an embedding is vocabulary-parallel (forward all-reduce of its output); any other split layer (a lone
// linear, a convolution) is column-parallel with its output all-gathered in the forward pass (TrioSim's gather)
// and its input gradient all-reduced in the backward pass.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "stepsim/ingest/extrapolate/op_features.hpp"
#include "stepsim/ingest/extrapolate/source_step.hpp"
#include "stepsim/workload/op.hpp"

namespace stepsim::extrapolate {

struct TpCollective {
  int after_op = -1;  // SourceStep op index it follows
  workload::CollType coll = workload::CollType::AllReduce;
  uint64_t bytes = 0; // S as nccl-tests counts it (all-gather: the gathered output)
  std::string name;
};

struct TpPlan {
  std::set<int> split_layers;               // layer-op node indices
  std::vector<TpCollective> collectives;    // in op order
  int pairs = 0, lone = 0, embeddings = 0;
};

// Empty plan for tp == 1. `batch` resizes the activations the collectives carry.
TpPlan plan_tensor_parallel(const SourceStep& s, int tp, const Resize& batch);

}  // namespace stepsim::extrapolate
