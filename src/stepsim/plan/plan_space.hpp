#pragma once
// The planner's search space: every parallel plan of a model on a fixed GPU count and global batch, walked
// depth-first (tensor, context, pipeline, expert, micro-batch, virtual stages, recompute, optimizer switches)
// with MoFa §4.1's pruning rules applied as early as each can be decided. A rule that fails at a level removes
// that whole subtree, and the removed leaves are counted against the rule (docs/PLANNER.md).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/catalog/gpu_catalog.hpp"
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

// Pruning rules, in the order the walk checks them. Memory is applied after the estimate (it needs one).
enum class Rule {
  TpWithinNode,        // MoFa rule 4
  TpDividesModel,      // Megatron shards heads, query groups and FFN evenly
  CpDividesSequence,   // 2 x CP chunks of the sequence; TP x CP under sequence parallelism
  ExpertDegree,        // EP divides the experts and DP x CP
  BatchDivisible,      // MoFa rule 2
  MicrobatchesPerStage,// MoFa rule 3
  LayersPerStage,      // PP x VP divides the layers (or layers + 2)
  Interleaving,        // VP > 1: PP >= 2 and micro-batches a multiple of PP
  ProgramSize,         // more ops per rank than the workload builder accepts
  Megatron,            // any other start-up check of spec::validate
  Memory,              // MoFa rule 1 / eq. 42: peak memory <= GPU capacity
  kCount
};
constexpr int kNumRules = static_cast<int>(Rule::kCount);
const char* rule_name(Rule r);
const char* rule_explanation(Rule r);

// What the walk varies. The defaults are what `stepsim plan` searches.
struct SpaceOptions {
  int gpus = 0;
  int64_t global_batch = 0;
  std::vector<int> micro_batch_sizes{1, 2, 4, 8};
  std::vector<int> virtual_stages{1, 2, 4};
  std::vector<spec::Recompute> recomputes{spec::Recompute::None, spec::Recompute::Selective, spec::Recompute::Full};
  // Search the layout variants (layout_variants below); false keeps the job's own tp_comm_overlap, cp_comm_type and
  // expert_tensor for every plan (`stepsim plan --keep-layout`).
  bool search_layouts = true;
  // fp8 recipes to search (`--fp8-recipes`); empty keeps the job's own. Only for fp8 jobs.
  std::vector<spec::Fp8Recipe> fp8_recipes;
};

struct PlanSpace {
  std::vector<Plan> plans;                  // survivors of every rule but Memory, in walk order
  std::array<int64_t, kNumRules> removed{}; // leaves each rule removed
  int64_t enumerated = 0;                   // leaves of the whole tree (survivors + removed)
};

// The layout variants of a (TP, CP) node: TP overlap off/on when TP > 1, p2p / all_gather / a2a when CP > 1, expert
// tensor TP / 1 for an MoE model when TP > 1.
struct LayoutVariant {
  bool tp_comm_overlap = false;
  spec::CpCommType cp_comm_type = spec::CpCommType::P2P;
  int cp_a2a = 0;  // a2a+p2p: the all-to-all level's size (Plan::cp_a2a)
  int expert_tensor = 0;
  bool ep_overlap = false;
  int fp8_recipe = -1;  // -1: the job's own
};
// fp8_recipes (SpaceOptions::fp8_recipes) multiply the variants when not empty.
std::vector<LayoutVariant> layout_variants(const spec::ModelSpec& m, int tensor, int context,
                                           const std::vector<spec::Fp8Recipe>& fp8_recipes = {}, int gpus_per_node = 8);

// The all-to-all level searched for hierarchical CP (a2a+p2p) at tensor t and context c: the largest a < c dividing c
// whose t x a ranks fit one node (Ulysses inside the node's NVLink, the ring across nodes, the layout Megatron-Core's
// hierarchical CP is for) and that divides the heads each TP rank holds (Ulysses splits heads); 0 when none exists.
int hierarchical_cp_a2a(const spec::ModelSpec& m, int tensor, int context, int gpus_per_node);

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

// Walks the space for `base` (a validated job: model, cluster, precision) on o.gpus GPUs.
PlanSpace enumerate_plans(const hw::GpuCatalog& gpus, const spec::JobSpec& base, const SpaceOptions& o);

// Layers of each model chunk: {} when pipeline x virtual_stages divides the layers evenly; else Megatron's
// split that counts the embedding and the loss as one layer each (first and last chunk one layer fewer),
// when pipeline x virtual_stages divides layers + 2. Sets ok = false when neither works.
std::vector<int> chunk_layers(int layers, int chunks, bool& ok);

// `base` with the plan applied (not validated): sequence parallelism on whenever TP > 1, the interleaved
// schedule (with Megatron's default p2p overlap) when virtual_stages > 1.
spec::JobSpec job_for(const spec::JobSpec& base, const Plan& p, int gpus, int64_t global_batch);

// The layout variants a plan chose, as the plan table's `layout` column: "tpo" (TP overlap), "cp:ring" / "cp:ag" /
// "cp:a2a" (CP > 1), "etp1" (expert tensor parallel 1 with TP > 1), "fp8:<recipe>" (a searched fp8 recipe), joined by
// '+'; "-" when none applies.
std::string layout_label(const Plan& p);

// "TP 8 PP 16 DP 64 CP 1 EP 1 mbs 1 VP 1 recompute full dist-opt ogr opg layout -" — for messages and notes (ZeRO-2
// and 3 say "zero2" / "zero3" instead of "dist-opt").
std::string describe(const Plan& p);

}  // namespace stepsim::plan
