// The planner's search space: each pruning rule removes exactly the hand-counted candidates.
#include <gtest/gtest.h>

#include "stepsim/plan/plan_space.hpp"
#include "stepsim/input/job_loader.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

spec::JobSpec tiny_job(int gpus, int64_t gbs) {
  spec::JobSpec j = test::job_from_yaml(test::small_gpt_yaml(1, 1, gpus, gbs));
  spec::validate(stepsim::catalog::shipped().gpus, j);
  return j;
}

int64_t removed(const plan::PlanSpace& s, plan::Rule r) { return s.removed[static_cast<int>(r)]; }

// 16 GPUs, global batch 16, micro-batch {1, 2}, VP {1, 2}, recompute none.
plan::SpaceOptions sixteen_gpu_options(bool search_layouts) {
  plan::SpaceOptions o;
  o.gpus = 16;
  o.global_batch = 16;
  o.micro_batch_sizes = {1, 2};
  o.virtual_stages = {1, 2};
  o.recomputes = {spec::Recompute::None};
  o.search_layouts = search_layouts;
  return o;
}

// 16 GPUs (2 nodes of 8), global batch 16, 8 layers, 16 heads, FFN 4096, seq 1024; micro-batch {1, 2},
// VP {1, 2}, recompute none: 2 x 2 x 1 x 9 optimizer variants (plain 2, ZeRO-1 4, ZeRO-2 2, ZeRO-3 1) = 36 leaves
// per (TP, CP, PP).
TEST(PlanSpace, EachRuleRemovesTheHandCountedPlans) {
  // The layout variants are counted in LayoutVariantsMultiplyTheLeaves.
  const plan::PlanSpace s = plan::enumerate_plans(stepsim::catalog::shipped().gpus, tiny_job(16, 16), sixteen_gpu_options(false));
  // (TP, CP, PP) with TP x CP x PP dividing 16 = 2^4: exponent triples summing to <= 4: C(7, 3) = 35.
  EXPECT_EQ(s.enumerated, 35 * 36);
  // TP 16 > 8 GPUs per node: only (16, 1, 1).
  EXPECT_EQ(removed(s, plan::Rule::TpWithinNode), 36);
  // 16 heads, 16 groups, FFN 4096 and (TP x CP) | 1024, 2 CP | 1024: nothing.
  EXPECT_EQ(removed(s, plan::Rule::TpDividesModel), 0);
  EXPECT_EQ(removed(s, plan::Rule::CpDividesSequence), 0);
  EXPECT_EQ(removed(s, plan::Rule::ExpertDegree), 0);
  // 16 % (mbs x DP): only DP 16 (TP = CP = PP = 1) with micro-batch 2; 2 VP x 9 = 18 leaves.
  EXPECT_EQ(removed(s, plan::Rule::BatchDivisible), 18);
  // m = 16 / (mbs x DP) < PP: with DP = 16 / (TP CP PP), m = TP CP PP / mbs < PP <=> TP CP < mbs, i.e.
  // TP = CP = 1 and mbs 2 with PP in {2, 4, 8, 16} (PP 1 is the batch rule's): 4 x 18 = 72.
  EXPECT_EQ(removed(s, plan::Rule::MicrobatchesPerStage), 72);
  // PP x VP must divide 8 or 10 (with >= 2 layers per chunk): 16 and 32 fail, 5 and 10 are not products here.
  // (PP 8, VP 2) on triples (1,1,8) (2,1,8) (1,2,8) x mbs {1, 2} minus (1,1,8) mbs 2 (rule above) = 5 x 9 = 45;
  // (PP 16, VP 1|2) only with (1,1,16) mbs 1 = 2 x 9 = 18. Total 63.
  EXPECT_EQ(removed(s, plan::Rule::LayersPerStage), 63);
  // VP 2 with PP 1 (Megatron needs PP >= 2): every (TP, CP) with TP x CP | 16 and TP <= 8 (14 pairs, all pass
  // the batch rule except (1,1) mbs 2) x mbs {1, 2} -> 14 x 2 - 1 = 27 x 9 = 243; PP >= 2 always has m % PP == 0 here.
  EXPECT_EQ(removed(s, plan::Rule::Interleaving), 243);
  EXPECT_EQ(removed(s, plan::Rule::ProgramSize), 0);
  EXPECT_EQ(removed(s, plan::Rule::Megatron), 0);
  EXPECT_EQ(static_cast<int64_t>(s.plans.size()), 1260 - 36 - 18 - 72 - 63 - 243);
  for (const plan::Plan& p : s.plans) {
    EXPECT_EQ(p.tensor * p.context * p.pipeline * p.data, 16);
    EXPECT_GE(16 / (p.micro_batch_size * p.data), p.pipeline);
    EXPECT_TRUE(p.distributed_optimizer || !p.overlap_param_gather);
    EXPECT_EQ(p.distributed_optimizer, p.zero_stage >= 1);
    EXPECT_TRUE(p.zero_stage < 2 || !p.overlap_grad_reduce);
    EXPECT_TRUE(p.zero_stage < 3 || !p.overlap_param_gather);
  }
}

TEST(PlanSpace, ExpertDegreeMustDivideExpertsAndDataTimesContext) {
  // 8 experts, 8 GPUs, TP 1..8: EP in {1, 2, 4, 8} must divide DP x CP.
  spec::JobSpec j = test::job_from_yaml(test::small_gpt_yaml(1, 1, 8, 8));
  j.model.moe = spec::MoeSpec{8, 2, 1024, 0, 1, 0, std::nullopt};
  spec::validate(stepsim::catalog::shipped().gpus, j);
  plan::SpaceOptions o;
  o.gpus = 8;
  o.global_batch = 8;
  o.micro_batch_sizes = {1};
  o.virtual_stages = {1};
  o.recomputes = {spec::Recompute::None};
  o.search_layouts = false;
  const plan::PlanSpace s = plan::enumerate_plans(stepsim::catalog::shipped().gpus, j, o);
  // Triples (TP, CP, PP) with product | 8: C(6, 3) = 20, times 4 EP values x 9 variants.
  EXPECT_EQ(s.enumerated, 20 * 4 * 9);
  // DP x CP = 8 / (TP x PP). EP e fails when e does not divide it: count pairs (triple, e) with e > DP x CP
  // (all powers of two): DP x CP = 2^(3 - a - c) for TP = 2^a, PP = 2^c, CP free: per triple, EP values above it.
  int64_t expected = 0;
  for (int a = 0; a <= 3; ++a)
    for (int b = 0; a + b <= 3; ++b)
      for (int c = 0; a + b + c <= 3; ++c) {
        const int dc = 1 << (3 - a - c);
        for (int e : {1, 2, 4, 8}) expected += e > dc ? 9 : 0;
      }
  EXPECT_EQ(removed(s, plan::Rule::ExpertDegree), expected);
}

// Layout variants (issue 13 item 5): per (TP, CP) node 2 TP-overlap settings when TP > 1 and 3 CP communications
// when CP > 1, a fourth (hierarchical a2a+p2p) where an all-to-all level a < CP fits a node: a | CP, a >= 2,
// TP x a <= 8 GPUs per node, a | 16 heads / TP; with TP = 2^a, CP = 2^b that is b >= 2 and a <= 2 (x 2 expert-TP
// settings for an MoE model when TP > 1). The 16-GPU space above has 35 (TP, CP, PP) triples of 2^a 2^b 2^c with
// a + b + c <= 4; leaves = 36 x sum over triples of (a > 0 ? 2 : 1) x (b > 0 ? 3 or 4 : 1).
TEST(PlanSpace, LayoutVariantsMultiplyTheLeaves) {
  const plan::PlanSpace s = plan::enumerate_plans(stepsim::catalog::shipped().gpus, tiny_job(16, 16), sixteen_gpu_options(true));
  int64_t leaves = 0;
  for (int a = 0; a <= 4; ++a)
    for (int b = 0; a + b <= 4; ++b)
      for (int c = 0; a + b + c <= 4; ++c)
        leaves += 36 * (a > 0 ? 2 : 1) * (b == 0 ? 1 : (b >= 2 && a <= 2) ? 4 : 3);
  EXPECT_EQ(s.enumerated, leaves);
  int tpo = 0, a2a = 0, hierarchical = 0;
  for (const plan::Plan& p : s.plans) {
    EXPECT_TRUE(!p.tp_comm_overlap || p.tensor > 1);
    EXPECT_TRUE(p.cp_comm_type == spec::CpCommType::P2P || p.context > 1);
    tpo += p.tp_comm_overlap;
    a2a += p.cp_comm_type == spec::CpCommType::A2A;
    if (p.cp_comm_type == spec::CpCommType::A2AP2P) {
      ++hierarchical;
      // The largest such a: TP 1 CP 16 -> 8, TP 1 CP 8 -> 4, TP 2 CP 8 -> 4, TP 2 or 4 at CP 4 -> 2, TP 1 CP 4 -> 2.
      const int want = p.context == 4 ? 2 : p.context == 8 ? 4 : 8;
      EXPECT_EQ(p.cp_a2a, want) << "TP " << p.tensor << " CP " << p.context;
      const spec::JobSpec j = plan::job_for(tiny_job(16, 16), p, 16, 16);
      EXPECT_EQ(j.parallelism.hierarchical_context_parallel_sizes, (std::vector<int>{want, p.context / want}));
    }
  }
  EXPECT_GT(tpo, 0);
  EXPECT_GT(a2a, 0);
  EXPECT_GT(hierarchical, 0);
  const spec::ModelSpec m16 = tiny_job(16, 16).model;
  EXPECT_EQ(plan::hierarchical_cp_a2a(m16, 8, 4, 8), 0);  // 8 x 2 ranks do not fit a node of 8
  EXPECT_EQ(plan::hierarchical_cp_a2a(m16, 1, 2, 8), 0);  // no a strictly between 1 and 2
  EXPECT_EQ(plan::hierarchical_cp_a2a(m16, 1, 16, 4), 4);  // a node of 4
  spec::ModelSpec odd_heads = m16;
  odd_heads.num_attention_heads = 6;
  EXPECT_EQ(plan::hierarchical_cp_a2a(odd_heads, 1, 8, 8), 2);  // 4 does not divide 6 heads, 2 does

  // The variants alone: TP 1, CP 1 -> one; TP 2, CP 2 -> 2 x 3; an MoE model at TP 2 -> 2 x 2 x 2 (the combined
  // 1F1B EP overlap off/on), at TP 1 -> 2.
  spec::ModelSpec dense = tiny_job(16, 16).model;
  EXPECT_EQ(plan::layout_variants(dense, 1, 1).size(), 1u);
  EXPECT_EQ(plan::layout_variants(dense, 2, 2).size(), 6u);
  dense.moe = spec::MoeSpec{8, 2, 1024, 0, 1, 0, std::nullopt};
  EXPECT_EQ(plan::layout_variants(dense, 2, 1).size(), 8u);
  EXPECT_EQ(plan::layout_variants(dense, 1, 1).size(), 2u);
}

TEST(PlanSpace, UnevenStagesFollowMegatronsEmbeddingAndLossAccounting) {
  bool ok = false;
  EXPECT_TRUE(plan::chunk_layers(126, 2, ok).empty());
  EXPECT_TRUE(ok);
  const std::vector<int> v = plan::chunk_layers(126, 16, ok);  // 128 / 16 = 8, ends 7
  ASSERT_TRUE(ok);
  ASSERT_EQ(v.size(), 16u);
  EXPECT_EQ(v.front(), 7);
  EXPECT_EQ(v[1], 8);
  EXPECT_EQ(v.back(), 7);
  plan::chunk_layers(126, 4, ok);  // 126 is not a multiple of 4, 128 is
  EXPECT_TRUE(ok);
  plan::chunk_layers(126, 5, ok);
  EXPECT_FALSE(ok);
}

TEST(PlanSpace, PlanJobsDoNotInheritTheBaseJobsSplitOrZeroStage) {
  // A base job with the distributed optimizer (validated: zero_stage 1) and an account-for-embedding split: a plan
  // without the distributed optimizer and with another pipeline must get neither.
  spec::JobSpec base = test::job_from_yaml(test::small_gpt_yaml(
      1, 3, 2, 16, ", account_for_embedding_in_pipeline_split: true", ", distributed_optimizer: true"));
  ASSERT_EQ(base.training.zero_stage, 1);
  ASSERT_EQ(base.parallelism.pipeline_layers, (std::vector<int>{2, 3, 3}));
  plan::Plan p;
  p.tensor = 1;
  p.pipeline = 2;
  p.data = 3;
  p.micro_batch_size = 1;
  p.distributed_optimizer = false;
  spec::JobSpec j = plan::job_for(base, p, 6, 12);
  spec::validate(stepsim::catalog::shipped().gpus, j);
  EXPECT_FALSE(j.training.distributed_optimizer);
  EXPECT_TRUE(j.parallelism.pipeline_layers.empty());  // 8 layers on 2 stages: even
}

}  // namespace
}  // namespace stepsim
