// The rank-order contract (docs/CONTRACTS.md): Megatron-Core's default tp-cp-ep-dp-pp order,
// rank = tp + t*(cp + c*(dp + d*pp)), with expert parallelism folded into the (cp, dp) ranks; and the
// process groups each collective runs on.
#include <gtest/gtest.h>

#include <set>

#include "stepsim/report/breakdown.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/rank_layout.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

using workload::GroupKind;
using workload::RankLayout;

std::vector<int> members(const RankLayout& l, GroupKind g, int rank) {
  std::vector<int> out;
  const int gid = l.group_id(g, rank);
  for (int i = 0; i < l.group_size(g); ++i) out.push_back(l.member(g, gid, i));
  return out;
}

TEST(RankLayout, FollowsMegatronCoreOrder) {
  const int t = 2, c = 2, d = 4, p = 3, e = 4;
  const RankLayout l(t, c, d, p, e, 8);
  ASSERT_EQ(l.world(), t * c * d * p);
  for (int pp = 0; pp < p; ++pp)
    for (int dp = 0; dp < d; ++dp)
      for (int cp = 0; cp < c; ++cp)
        for (int tp = 0; tp < t; ++tp) {
          const int rank = tp + t * (cp + c * (dp + d * pp));
          const auto rc = l.coord(rank);
          EXPECT_EQ(rc.tp, tp);
          EXPECT_EQ(rc.cp, cp);
          EXPECT_EQ(rc.dp, dp);
          EXPECT_EQ(rc.pp, pp);
          EXPECT_EQ(l.rank_of(rc), rank);
        }
  // Rank 13 = tp 1, cp 0, dp 3, pp 0 (13 = 1 + 2*(0 + 2*3)).
  EXPECT_EQ(members(l, GroupKind::Tp, 13), (std::vector<int>{12, 13}));
  EXPECT_EQ(members(l, GroupKind::Cp, 13), (std::vector<int>{13, 15}));
  // The gradient group spans context and data ranks (Megatron's DP-with-CP group): stride t.
  EXPECT_EQ(members(l, GroupKind::Dp, 13), (std::vector<int>{1, 3, 5, 7, 9, 11, 13, 15}));
  EXPECT_EQ(members(l, GroupKind::Pp, 13), (std::vector<int>{13, 29, 45}));
  // Experts fold into the combined (cp, dp) index u = cp + c*dp: EP groups are runs of e consecutive u.
  EXPECT_EQ(members(l, GroupKind::Ep, 13), (std::vector<int>{9, 11, 13, 15}));
  EXPECT_EQ(members(l, GroupKind::Edp, 13), (std::vector<int>{5, 13}));
}

TEST(RankLayout, GroupsPartitionTheWorld) {
  const RankLayout l(2, 2, 4, 3, 4, 8);
  for (int g = 0; g < workload::kNumGroupKinds; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    std::set<int> seen;
    for (int gid = 0; gid < l.num_groups(kind); ++gid) {
      for (int i = 0; i < l.group_size(kind); ++i) {
        const int r = l.member(kind, gid, i);
        EXPECT_TRUE(seen.insert(r).second) << workload::name_of(kind) << " rank " << r << " in two groups";
        EXPECT_EQ(l.group_id(kind, r), gid);
        EXPECT_EQ(l.index_in_group(kind, r), i);
      }
    }
    EXPECT_EQ(static_cast<int>(seen.size()), l.world()) << workload::name_of(kind);
  }
}

TEST(RankLayout, GeometryCountsNodes) {
  const RankLayout l(8, 1, 4, 2, 1, 8);  // TP fills a node; DP and PP cross nodes
  EXPECT_EQ(l.geometry(GroupKind::Tp, 0), (workload::GroupGeometry{8, 1, 8}));
  EXPECT_EQ(l.geometry(GroupKind::Dp, 0), (workload::GroupGeometry{4, 4, 1}));
  EXPECT_EQ(l.geometry(GroupKind::Pp, 0), (workload::GroupGeometry{2, 2, 1}));
  EXPECT_EQ(l.next_stage_rank(3), 35);
  EXPECT_EQ(l.prev_stage_rank(3), 35);  // two stages: the ring wraps
}

// Context parallelism: per layer and micro-batch, the K/V all-gather in forward, again in backward, and
// the reduce-scatter of dK/dV, each of S = beta b s (K+V width per TP rank), bus factor (c-1)/c.
TEST(RankLayout, ContextParallelKvExchangeVolume) {
  const int64_t h = 1024, s = 4096, heads = 16, groups = 4, d = h / heads, c = 4, L = 4, m = 2, beta = 2;  // as the job
  const spec::JobSpec job = test::job_from_yaml(
      "model: {name: gqa, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, num_query_groups: 4,"
      " ffn_hidden_size: 4096, vocab_size: 32000, seq_length: 4096}\n"
      "parallelism: {context: 4, data: 1, cp_comm_type: all_gather}\ntraining: {micro_batch_size: 1, global_batch_size: 2}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 4, gpus_per_node: 4}\n");
  const workload::Workload w = workload::build_megatron_workload(job);
  const report::CommBytes cb = report::comm_bytes(w, 0);
  const double S = double(beta) * 1 * s * (2 * groups * d);
  EXPECT_EQ(cb.calls[report::kCp], uint64_t(3 * L * m));
  EXPECT_NEAR(double(cb.message[report::kCp]), 3.0 * L * m * S, 0.5);
  EXPECT_NEAR(double(cb.volume[report::kCp]), 3.0 * L * m * S * (c - 1) / c, 1.0);
}

}  // namespace
}  // namespace stepsim
