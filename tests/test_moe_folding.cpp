// MoE parallel folding (issue 13 item 1c): expert-parallel x expert-tensor groups formed from the tensor x context x
// data ranks of a stage (Megatron-Core's expert rank order tp-ep-dp), so EP may exceed DP. Hand-listed groups, a
// round trip over every rank, and a folded job (EP 8 > DP 4) that simulates.
#include <gtest/gtest.h>

#include <set>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/rank_layout.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using workload::GroupKind;
using workload::RankLayout;

std::vector<int> members(const RankLayout& l, GroupKind g, int gid) {
  std::vector<int> out;
  for (int i = 0; i < l.group_size(g); ++i) out.push_back(l.member(g, gid, i));
  return out;
}

// Round trip: every rank is in exactly one group of each kind, at its index.
void expect_round_trip(const RankLayout& l, std::initializer_list<GroupKind> kinds) {
  for (GroupKind g : kinds) {
    std::set<int> seen;
    for (int gid = 0; gid < l.num_groups(g); ++gid) {
      for (int i = 0; i < l.group_size(g); ++i) {
        const int r = l.member(g, gid, i);
        EXPECT_EQ(l.group_id(g, r), gid) << workload::name_of(g);
        EXPECT_EQ(l.index_in_group(g, r), i) << workload::name_of(g);
        EXPECT_TRUE(seen.insert(r).second) << workload::name_of(g);
      }
    }
    EXPECT_EQ(static_cast<int>(seen.size()), l.world()) << workload::name_of(g);
  }
}

TEST(MoeFolding, ExpertGroupsSpanTensorAndDataRanks) {
  // TP 2, DP 4, PP 2 (8 ranks a stage), EP 4, ETP 1: a stage's ranks v = ep + 4 * edp.
  const RankLayout l(2, 1, 4, 2, 4, 8, 1);
  EXPECT_EQ(l.group_size(GroupKind::Ep), 4);
  EXPECT_EQ(l.group_size(GroupKind::Edp), 2);
  EXPECT_EQ(members(l, GroupKind::Ep, l.group_id(GroupKind::Ep, 0)), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(members(l, GroupKind::Ep, l.group_id(GroupKind::Ep, 5)), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(members(l, GroupKind::Edp, l.group_id(GroupKind::Edp, 1)), (std::vector<int>{1, 5}));
  EXPECT_EQ(members(l, GroupKind::Ep, l.group_id(GroupKind::Ep, 9)), (std::vector<int>{8, 9, 10, 11}));  // stage 1
  expect_round_trip(l, {GroupKind::Ep, GroupKind::Edp, GroupKind::Tp, GroupKind::Dp});
}

TEST(MoeFolding, DefaultExpertTensorKeepsTheOldLayout) {
  // ETP = TP: EP folded into data ranks of the same TP index (ranks 0, 2, 4, 6 with TP 2, DP 4, EP 4).
  const RankLayout l(2, 1, 4, 1, 4, 8);
  EXPECT_EQ(members(l, GroupKind::Ep, l.group_id(GroupKind::Ep, 0)), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(l.group_size(GroupKind::Edp), 1);
}

std::string moe_job(int ep, int etp) {
  return "model: {name: m, num_layers: 2, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
         " vocab_size: 32000, seq_length: 1024, activation: swiglu, moe: {num_experts: 16, topk: 2, ffn_hidden_size: 512}}\n"
         "parallelism: {tensor: 2, pipeline: 1, sequence_parallel: true, expert: " + std::to_string(ep) +
         ", expert_tensor: " + std::to_string(etp) + "}\n"
         "training: {micro_batch_size: 1, global_batch_size: 8}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8, intra_node: {bandwidth_GBps: 450},"
         " inter_node: {bandwidth_Gbps: 400}}\n";
}

TEST(MoeFolding, ExpertParallelWiderThanDataParallelSimulates) {
  // DP 4 but EP 8: refused before folding; now the 8 ranks of the stage form one expert group.
  const spec::JobSpec job = test::job_from_yaml(moe_job(8, 1));
  EXPECT_EQ(job.parallelism.data, 4);
  const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), job, {0});
  EXPECT_GT(s.result.step_ns, 0);
  EXPECT_EQ(s.workload.layout.group_size(GroupKind::Ep), 8);
  // With ETP 1 the routed experts are whole on each rank: no TP all-gather of routed tokens.
  for (const auto& op : s.workload.programs[0].ops) {
    EXPECT_NE(s.workload.programs[0].name(op), "moe_tp_all_gather");
  }
  // 2 local experts of 3 x 1024 x 512 parameters each (SwiGLU), not divided by TP.
  EXPECT_EQ(s.workload.programs[0].expert_parameters, 2 * int64_t{2} * 3 * 1024 * 512);
}

TEST(MoeFolding, BadExpertTensorNamesTheKey) {
  auto error = [](const std::string& yaml) {
    try {
      test::job_from_yaml(yaml);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(moe_job(8, 4)).find("parallelism.expert_tensor: expert 8 x expert_tensor 4 does not divide tensor x "
                                     "context x data 8"), std::string::npos);
  EXPECT_NE(error(moe_job(16, 1)).find("expert 16 x expert_tensor 1 does not divide tensor x context x data 8"),
            std::string::npos);
}

// Expert tensor parallel size between 1 and TP (TP 4, ETP 2, EP 2 on 8 GPUs, DP 2): the expert-tensor groups are pairs
// of consecutive ranks, their own communicator; the routed tokens of a pair's sequence shards are gathered over it
// after the all-to-all and reduce-scattered before the combine; each expert's FFN is split 2 ways.
TEST(MoeFolding, ExpertTensorBetweenOneAndTensorFormsItsOwnGroup) {
  const RankLayout l(4, 1, 2, 1, 2, 8, 2);
  EXPECT_EQ(l.group_size(GroupKind::Etp), 2);
  EXPECT_EQ(members(l, GroupKind::Etp, l.group_id(GroupKind::Etp, 5)), (std::vector<int>{4, 5}));
  EXPECT_EQ(members(l, GroupKind::Ep, l.group_id(GroupKind::Ep, 0)), (std::vector<int>{0, 2}));
  EXPECT_EQ(members(l, GroupKind::Edp, l.group_id(GroupKind::Edp, 0)), (std::vector<int>{0, 4}));
  expect_round_trip(l, {GroupKind::Etp, GroupKind::Ep, GroupKind::Edp});
  // tp, ep, dp, edp and the expert-tensor group: one communicator each; with etp = tp it adds none (and edp is 1).
  EXPECT_EQ(l.communicators(), 5);
  EXPECT_EQ(RankLayout(4, 1, 2, 1, 2, 8, 4).communicators(), 3);

  std::string yaml = moe_job(2, 2);
  yaml.replace(yaml.find("tensor: 2,"), 10, "tensor: 4,");
  const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(yaml), {0});
  EXPECT_GT(s.result.step_ns, 0);
  const auto& p = s.workload.programs[0];
  // By hand: T = 1,024 tokens, 256 per rank under SP; top-2: 512 routed copies leave a rank (the all-to-all's message,
  // 512 x 1,024 x 2 B = 1 MiB); the pair's 2 x 512 = 1,024 rows are gathered (2 MiB).
  int gathers = 0, all_to_alls = 0;
  for (const auto& op : p.ops) {
    const std::string& n = p.name(op);
    if (n == "moe_tp_all_gather" && op.phase == workload::Phase::Forward) {
      ++gathers;
      EXPECT_EQ(op.group, GroupKind::Etp);
      EXPECT_EQ(op.bytes, uint64_t{2} << 20);
    }
    if (n == "moe_dispatch_all_to_all" && op.phase == workload::Phase::Forward) {
      ++all_to_alls;
      EXPECT_EQ(op.bytes, uint64_t{1} << 20);
    }
    if (n == "moe_tp_reduce_scatter" && op.phase == workload::Phase::Forward) {
      EXPECT_EQ(op.group, GroupKind::Etp);
    }
  }
  EXPECT_EQ(gathers, 2 * 4);  // 2 layers x 4 micro-batches (global batch 8 over DP 2)
  EXPECT_EQ(all_to_alls, 2 * 4);
  // 8 local experts of 3 x 1,024 x 512 (SwiGLU), each split over the 2 expert-tensor ranks, in 2 layers.
  EXPECT_EQ(p.expert_parameters, 2 * int64_t{8} * 3 * 1024 * 512 / 2);
}

TEST(MoeFolding, FirstDenseLayersIsTheSameKeyUnderItsRecipeName) {
  std::string yaml = moe_job(8, 1);
  yaml.replace(yaml.find("ffn_hidden_size: 512}"), 21, "ffn_hidden_size: 512, first_dense_layers: 1}");
  EXPECT_EQ(test::job_from_yaml(yaml).model.moe->first_k_dense, 1);
  yaml.replace(yaml.find("first_dense_layers: 1"), 21, "first_dense_layers: 1, first_k_dense: 1");
  EXPECT_THROW(test::job_from_yaml(yaml), InputError);
}

}  // namespace
}  // namespace stepsim
