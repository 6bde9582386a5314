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
#include "stepsim/plan/plan.hpp"
#include "stepsim/plan/plan_constraints.hpp"

namespace stepsim::plan {

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
  Framework,           // a plan the job's framework does not run (or does not search unasked)
  Constraint,          // outside the user's --fix / --allow / --exclude
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
  // The job's framework: its optimizer variants, recompute values and cross-key rules (framework_space), and the
  // constraints from it and from the user (merge_constraints). A user's fix/allow of micro_batch_size or
  // virtual_stages replaces the lists above.
  spec::Framework framework = spec::Framework::MegatronCore;
  std::vector<OptimizerVariant> optimizer_variants{kOptimizerVariantList.begin(), kOptimizerVariantList.end()};
  SearchConstraints constraints;
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
