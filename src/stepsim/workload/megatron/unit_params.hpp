#pragma once
// Parameters of a gradient unit (the embedding, a layer, an MTP depth, the head) on this rank: what its gradients
// reduce, what ZeRO-3 gathers, and the tensors PyTorch registers for it.
#include <cstdint>
#include <vector>

#include "stepsim/workload/megatron/context.hpp"

namespace stepsim::workload::megatron {

// Dense parameters (reduced over the DP group) or routed-expert ones (the expert-DP group).
int64_t unit_params(const Context& cx, int unit, bool expert);
// Parameter tensors of a unit as PyTorch registers them (one nn.Parameter each).
std::vector<int64_t> unit_tensors(const Context& cx, int unit);
// Parameters of a layer replicated across TP ranks but seeing only their sequence shard under SP (marked
// sequence_parallel in Megatron): norms, row-parallel biases, the router, MLA's down-projections.
int64_t sequence_parallel_params(const Context& cx, int layer);

}  // namespace stepsim::workload::megatron
