#pragma once
// Megatron-Core's MoE token dispatchers (alltoall, allgather, flex/DeepEP): routed token counts, the way from a rank's
// tokens to its experts' input and back, the permutations around it and the host synchronisation of dropless routing.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

// Routed tokens per rank: leaving it (sequence shard x top-k) and reaching its experts (gathered over the
// expert-tensor group when experts are TP-split); the all-gather dispatcher's gathered tokens.
struct MoeTokens {
  int64_t routed_sp = 0, routed = 0, gathered = 0;
  bool tp_stage = false;  // an all-gather / reduce-scatter over the expert-tensor group beside the expert-group one
  GroupKind etp = GroupKind::Tp;  // the expert-tensor group: the TP group when expert_tensor = tensor
};
MoeTokens moe_tokens(const Context& cx);

// Dispatch (forward) or the combine's gradient (backward): from this rank's tokens to its experts' input.
Ref moe_to_experts(Emitter& em, const Context& cx, Ref dep, bool backward);
// Combine (forward) or the dispatch's gradient (backward): from its experts' output to this rank's tokens.
Ref moe_from_experts(Emitter& em, const Context& cx, Ref dep, bool backward);
// After the dispatch: the received tokens into expert order (and back before the combine: moe_token_order).
Ref moe_expert_order(Emitter& em, const Context& cx, Ref x, bool backward);
Ref moe_token_order(Emitter& em, const Context& cx, Ref x, bool backward);

}  // namespace stepsim::workload::megatron
