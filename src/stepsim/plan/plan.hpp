#pragma once
// One point of the planner's search space (docs/PLANNER.md) and the optimizer switches a plan carries.
#include <array>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::plan {

// One point of the search space. data = gpus / (tensor x context x pipeline).
struct Plan {
  int tensor = 1, pipeline = 1, data = 1, context = 1, expert = 1;
  int micro_batch_size = 1, virtual_stages = 1;
  spec::Recompute recompute = spec::Recompute::None;
  bool distributed_optimizer = false, overlap_grad_reduce = false, overlap_param_gather = false;
  // ZeRO stage (issue 13 item 5): 0 plain, 1 the distributed optimizer, 2 also the gradients sharded (reduce-scattered
  // every micro-batch), 3 also the parameters (gathered per layer). distributed_optimizer == (zero_stage >= 1).
  int zero_stage = 0;
  // Searched where they exist (issue 13 item 5): userbuffers TP overlap (TP > 1), the context-parallel communication
  // (CP > 1) and the expert tensor parallel size (MoE with TP > 1: TP, or 1 = parallel folding; 0 = TP).
  bool tp_comm_overlap = false;
  spec::CpCommType cp_comm_type = spec::CpCommType::P2P;
  // Hierarchical CP (cp_comm_type a2a+p2p): the all-to-all level's size a, the ring taking context / a
  // (parallelism.hierarchical_context_parallel_sizes [a, context / a]); 0 = the job's own a (or none).
  int cp_a2a = 0;
  int expert_tensor = 0;
  // MoE: Megatron-Core's combined 1F1B EP overlap (training.overlap_moe_expert_parallel_comm, with
  // delay_wgrad_compute), searched off/on; plans Megatron-Core refuses with it (EP 1, full recompute, PP > 1 without
  // interleaving: spec::ep_overlap_refusal) are dropped as megatron-checks.
  bool ep_overlap = false;
  // fp8 jobs with `stepsim plan --fp8-recipes`: the Transformer Engine recipe (spec::Fp8Recipe as int); -1 keeps the
  // job's own (the default: the recipe is a numerics choice, searched only when asked).
  int fp8_recipe = -1;
  bool operator==(const Plan&) const = default;
};

// The optimizer switches searched per plan: the ZeRO stage with overlap_grad_reduce and overlap_param_gather where they
// change something. overlap_param_gather exists only with a sharded optimizer and not at stage 3 (its parameters are
// gathered per layer); overlap_grad_reduce only at stages 0-1 (stages 2-3 reduce-scatter every micro-batch as each
// layer's backward ends, overlapped by construction).
struct OptimizerVariant {
  int zero_stage = 0;
  bool overlap_grad_reduce = false, overlap_param_gather = false;
};
inline constexpr std::array<OptimizerVariant, 9> kOptimizerVariantList{{
    {0, false, false}, {0, true, false},                                       // plain
    {1, false, false}, {1, true, false}, {1, false, true}, {1, true, true},    // distributed optimizer (ZeRO-1)
    {2, false, false}, {2, false, true},                                       // ZeRO-2
    {3, false, false},                                                         // ZeRO-3 / FSDP
}};
constexpr int kOptimizerVariants = static_cast<int>(kOptimizerVariantList.size());

}  // namespace stepsim::plan
