// Where one token's routed experts land (workload/moe_routing.hpp) and the flex (DeepEP) dispatcher's all-to-all size
// that follows from it: probabilities by hand, and the message sizes of a job against the alltoall dispatcher's.
#include <gtest/gtest.h>

#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/moe_routing.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

using workload::expected_blocks_reached;
using workload::ExpertRouting;

TEST(MoeRouting, BlocksReachedWithoutAGroupLimit) {
  // 8 experts in 2 blocks of 4, top 2: a block is missed with C(4,2)/C(8,2) = 6/28, so 2 x 22/28 blocks are reached.
  EXPECT_NEAR(expected_blocks_reached({8, 2, 0, 0}, 2), 2.0 * 22 / 28, 1e-12);
  // One expert per block: every one of the k experts is its own block.
  EXPECT_NEAR(expected_blocks_reached({8, 2, 0, 0}, 8), 2.0, 1e-12);
  EXPECT_EQ(expected_blocks_reached({8, 2, 0, 0}, 1), 1.0);
}

TEST(MoeRouting, BlocksReachedUnderGroupLimitedRouting) {
  // 8 experts, 4 groups of 2 (one per block), top 2 from the best 2 groups: a block's group is chosen with 1/2, and
  // then missed when both experts come from the other chosen group, C(2,2)/C(4,2) = 1/6: 4 x 1/2 x 5/6 = 5/3.
  EXPECT_NEAR(expected_blocks_reached({8, 2, 4, 2}, 4), 5.0 / 3, 1e-12);
  // Blocks within groups: 2 groups of 4, 1 chosen, 4 blocks of 2: reached with 1/2 x (1 - C(2,2)/C(4,2)), x 4 = 5/3.
  EXPECT_NEAR(expected_blocks_reached({8, 2, 2, 1}, 4), 5.0 / 3, 1e-12);
  // DeepSeek-V3 on 8 nodes (256 experts, 8 groups = nodes, best 4, top 8): 4 x (1 - C(96,8)/C(128,8)) ~ 3.63 of the
  // 8 nodes, never more than the 4 chosen groups; without the limit ~ 5.3.
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (96.0 - i) / (128.0 - i);
  EXPECT_NEAR(expected_blocks_reached({256, 8, 8, 4}, 8), 4 * (1 - miss), 1e-9);
  EXPECT_NEAR(expected_blocks_reached({256, 8, 8, 4}, 8), 3.63, 0.01);
  EXPECT_NEAR(expected_blocks_reached({256, 8, 0, 0}, 8), 5.3, 0.05);
}

// 16 experts, top 4, EP 16: over two nodes of 8 (gpus_per_node 8) or one node of 16.
uint64_t dispatch_bytes(const std::string& dispatcher, int gpus_per_node) {
  const std::string y =
      "model: {name: m, num_layers: 1, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
      " activation: swiglu, vocab_size: 32000, seq_length: 1024,"
      " moe: {num_experts: 16, topk: 4, ffn_hidden_size: 512, token_dispatcher: " + dispatcher + "}}\n"
      "parallelism: {expert: 16}\ntraining: {micro_batch_size: 1, global_batch_size: 16}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 16, gpus_per_node: " + std::to_string(gpus_per_node) + "}\n";
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(y));
  const workload::Program& p = w.programs[0];
  for (const auto& op : p.ops)
    if (p.name(op) == "moe_dispatch_all_to_all") return op.bytes;
  ADD_FAILURE();
  return 0;
}

TEST(MoeRouting, FlexSendsATokenOncePerRemoteNodeAcrossNodesAndOncePerRankWithin) {
  const double per_expert = 1024.0 * 4 * 1024 * 2;  // tokens x top 4 x h x 2 bytes: the alltoall dispatcher's rows
  EXPECT_EQ(dispatch_bytes("alltoall", 8), static_cast<uint64_t>(per_expert));
  // Two nodes of 8 experts: a node is missed with C(8,4)/C(16,4) = 1/26, so 2 x 25/26 nodes are reached, half of them
  // remote; the all-to-all's inter-node share is (16 - 8)/16 of S: S = tokens x h x 2 B x (25/26) x 16/8.
  EXPECT_NEAR(static_cast<double>(dispatch_bytes("flex", 8)), 1024.0 * 1024 * 2 * (25.0 / 26) * 2, 1.0);
  // One node of 16 ranks, one expert each: every expert is its own rank, as many copies as the alltoall dispatcher.
  EXPECT_EQ(dispatch_bytes("flex", 16), static_cast<uint64_t>(per_expert));
}

TEST(MoeRouting, GroupLimitedRoutingKeysAreChecked) {
  auto job = [](const std::string& extra) {
    return "model: {name: m, num_layers: 1, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
           " vocab_size: 32000, seq_length: 1024, moe: {num_experts: 16, topk: 4, ffn_hidden_size: 512" + extra + "}}\n"
           "training: {micro_batch_size: 1, global_batch_size: 1}\ncluster: {gpu: H100-SXM, num_gpus: 1}\n";
  };
  EXPECT_EQ(test::job_error(job(", router_num_groups: 4, router_group_topk: 2")), "");
  EXPECT_NE(test::job_error(job(", router_num_groups: 4")).find("go together"), std::string::npos);
  EXPECT_NE(test::job_error(job(", router_num_groups: 3, router_group_topk: 1")).find("does not divide"), std::string::npos);
  EXPECT_NE(test::job_error(job(", router_num_groups: 4, router_group_topk: 5")).find("exceeds"), std::string::npos);
  EXPECT_NE(test::job_error(job(", router_num_groups: 8, router_group_topk: 1")).find("fewer experts than topk"),
            std::string::npos);
}

}  // namespace
}  // namespace stepsim
