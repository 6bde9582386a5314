#pragma once
// The planner's search space: every parallel plan of a model on a fixed GPU count and global batch, walked
// depth-first (tensor, context, pipeline, expert, micro-batch, virtual stages, recompute, optimizer switches)
// with MoFa §4.1's pruning rules applied as early as each can be decided. A rule that fails at a level removes
// that whole subtree, and the removed leaves are counted against the rule (docs/PLANNER.md).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/spec/job_spec.hpp"

namespace stepsim::plan {

// One point of the search space. data = gpus / (tensor x context x pipeline).
struct Plan {
  int tensor = 1, pipeline = 1, data = 1, context = 1, expert = 1;
  int micro_batch_size = 1, virtual_stages = 1;
  spec::Recompute recompute = spec::Recompute::None;
  bool distributed_optimizer = false, overlap_grad_reduce = false, overlap_param_gather = false;
  // Searched where they exist (issue 13 item 5): userbuffers TP overlap (TP > 1), the context-parallel communication
  // (CP > 1) and the expert tensor parallel size (MoE with TP > 1: TP, or 1 = parallel folding; 0 = TP).
  bool tp_comm_overlap = false;
  spec::CpCommType cp_comm_type = spec::CpCommType::P2P;
  int expert_tensor = 0;
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
  int expert_tensor = 0;
};
std::vector<LayoutVariant> layout_variants(const spec::ModelSpec& m, int tensor, int context);

// The optimizer switches searched per plan: (distributed optimizer, overlap_grad_reduce, overlap_param_gather).
// overlap_param_gather exists only with the distributed optimizer.
constexpr int kOptimizerVariants = 6;

// Walks the space for `base` (a validated job: model, cluster, precision) on o.gpus GPUs.
PlanSpace enumerate_plans(const spec::JobSpec& base, const SpaceOptions& o);

// Layers of each model chunk: {} when pipeline x virtual_stages divides the layers evenly; else Megatron's
// split that counts the embedding and the loss as one layer each (first and last chunk one layer fewer),
// when pipeline x virtual_stages divides layers + 2. Sets ok = false when neither works.
std::vector<int> chunk_layers(int layers, int chunks, bool& ok);

// `base` with the plan applied (not validated): sequence parallelism on whenever TP > 1, the interleaved
// schedule (with Megatron's default p2p overlap) when virtual_stages > 1.
spec::JobSpec job_for(const spec::JobSpec& base, const Plan& p, int gpus, int64_t global_batch);

// The layout variants a plan chose, as the plan table's `layout` column: "tpo" (TP overlap), "cp:ring" / "cp:ag" /
// "cp:a2a" (CP > 1), "etp1" (expert tensor parallel 1 with TP > 1), joined by '+'; "-" when none applies.
std::string layout_label(const Plan& p);

// "TP 8 PP 16 DP 64 CP 1 EP 1 mbs 1 VP 1 recompute full dist-opt ogr opg layout -" — for messages and notes.
std::string describe(const Plan& p);

}  // namespace stepsim::plan
