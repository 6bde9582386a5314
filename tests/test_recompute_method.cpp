// Full recompute's method (issue 13 item 1g; Megatron's --recompute-method / --recompute-num-layers): block
// recomputes the first N layers of each model chunk and keeps every activation of the others; uniform with N > 1
// keeps one checkpoint per group of N layers and still recomputes every layer. Counts and bytes by hand.
#include <gtest/gtest.h>

#include <map>

#include "stepsim/input/megatron_args.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

// 8 layers on 2 stages (4 per stage), h 1024, s 1024, b 1, no TP: a layer's checkpoint is beta s h = 2 MiB.
std::string job(const std::string& recompute) {
  return "model: {name: g, num_layers: 8, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
         " vocab_size: 32000, seq_length: 1024}\n"
         "parallelism: {pipeline: 2, data: 1}\n"
         "training: {micro_batch_size: 1, global_batch_size: 1, precision: bf16, " + recompute + "}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 2, gpus_per_node: 2}\n";
}

struct PerLayer {
  std::map<int, int> recompute_ops;
  std::map<int, int64_t> stored;  // forward allocations
};

PerLayer per_layer(const std::string& recompute, int stage) {
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(job(recompute)));
  const workload::Program& p = w.programs[w.role_of_stage[stage]];
  PerLayer r;
  for (const auto& op : p.ops) {
    if (op.layer < 0) continue;
    if (op.phase == workload::Phase::Recompute) ++r.recompute_ops[op.layer];
    if (op.phase == workload::Phase::Forward) r.stored[op.layer] += op.mem_alloc_at_start - op.mem_transient;
  }
  return r;
}

TEST(RecomputeMethod, BlockRecomputesTheFirstLayersOfEachChunk) {
  PerLayer none = per_layer("recompute: none", 1);
  PerLayer block = per_layer("recompute: full, recompute_method: block, recompute_num_layers: 1", 1);
  const int64_t checkpoint = 2 * 1024 * 1024;
  // Stage 1 holds layers 4-7: layer 4 is recomputed and keeps its input only; 5-7 keep everything.
  EXPECT_GT(block.recompute_ops[4], 0);
  EXPECT_EQ(block.stored[4], checkpoint);
  for (int l = 5; l < 8; ++l) {
    EXPECT_EQ(block.recompute_ops.count(l), 0u) << l;
    EXPECT_EQ(block.stored[l], none.stored[l]) << l;
  }
  EXPECT_GT(none.stored[5], 4 * checkpoint);  // a whole layer's activations are far more than its input
}

TEST(RecomputeMethod, UniformGroupsKeepOneCheckpointPerGroup) {
  PerLayer one = per_layer("recompute: full", 0);
  PerLayer two = per_layer("recompute: full, recompute_method: uniform, recompute_num_layers: 2", 0);
  const int64_t checkpoint = 2 * 1024 * 1024;
  for (int l = 0; l < 4; ++l) {
    EXPECT_EQ(one.stored[l], checkpoint) << l;
    EXPECT_EQ(two.stored[l], l % 2 == 0 ? checkpoint : 0) << l;  // groups {0, 1}, {2, 3}
    EXPECT_EQ(two.recompute_ops[l], one.recompute_ops[l]) << l;  // every layer is still recomputed
  }
}

TEST(RecomputeMethod, MegatronArgsMapBothFlags) {
  const YAML::Node j = spec::megatron_args_to_job_node(
      "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8 --recompute-granularity full --recompute-method block --recompute-num-layers 2");
  EXPECT_EQ(j["training"]["recompute_method"].as<std::string>(), "block");
  EXPECT_EQ(j["training"]["recompute_num_layers"].as<int>(), 2);
}

// Megatron's --distribute-saved-activations: with TP 2 and no SP each rank keeps half of the 2 MiB checkpoint and the
// layer's recompute first all-gathers it over TP (2 MiB all-gather, one per recomputed layer and micro-batch).
TEST(RecomputeMethod, DistributedCheckpointIsSplitOverTpAndGatheredBack) {
  auto tp2 = [](const std::string& extra) {
    std::string y = job("recompute: full" + extra);
    y.replace(y.find("pipeline: 2, data: 1"), 20, "pipeline: 2, tensor: 2");
    y.replace(y.find("num_gpus: 2, gpus_per_node: 2"), 29, "num_gpus: 4, gpus_per_node: 4");
    return y;
  };
  const workload::Workload plain = workload::build_megatron_workload(test::job_from_yaml(tp2("")));
  const workload::Workload split =
      workload::build_megatron_workload(test::job_from_yaml(tp2(", distribute_saved_activations: true")));
  const workload::Program& a = plain.programs[0];
  const workload::Program& b = split.programs[0];
  int64_t stored_a = 0, stored_b = 0;
  int gathers = 0;
  for (const auto& op : a.ops)
    if (op.layer == 0 && op.phase == workload::Phase::Forward) stored_a += op.mem_alloc_at_start - op.mem_transient;
  for (const auto& op : b.ops) {
    if (op.layer == 0 && op.phase == workload::Phase::Forward) stored_b += op.mem_alloc_at_start - op.mem_transient;
    if (b.name(op) == "checkpoint_all_gather") {
      ++gathers;
      EXPECT_EQ(op.bytes, 2u << 20);
      EXPECT_EQ(op.group, workload::GroupKind::Tp);
    }
  }
  EXPECT_EQ(stored_a, 2 << 20);
  EXPECT_EQ(stored_b, 1 << 20);
  EXPECT_EQ(gathers, 4);  // 4 layers on this stage, 1 micro-batch
  EXPECT_NE(test::job_error(job("recompute: full, distribute_saved_activations: true"))
                .find("training.distribute_saved_activations: needs recompute: full, parallelism.tensor > 1"),
            std::string::npos);
  const YAML::Node j = spec::megatron_args_to_job_node(
      "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8 --recompute-granularity full --recompute-method uniform --distribute-saved-activations");
  EXPECT_TRUE(j["training"]["distribute_saved_activations"].as<bool>());
}

}  // namespace
}  // namespace stepsim
