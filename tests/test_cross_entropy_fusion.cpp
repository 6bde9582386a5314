// Transformer Engine's fused cross-entropy (training.cross_entropy_fusion: te; issue 13): the last stage's loss ops
// move the bytes of TE's kernel design, the job key comes from Megatron's flags and from validate's rule for
// Megatron-Bridge rows, and the loss gets cheaper than the unfused path.
#include <gtest/gtest.h>

#include <map>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/input/megatron_args.hpp"
#include "stepsim/validate/published_run.hpp"
#include "stepsim/validate/run_job.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

// The loss ops of the one stage of a TP 2 job (tiny GPT of test_util.hpp: 1,024 tokens, vocabulary 32,000).
std::map<std::string, workload::Op> loss_ops(const std::string& training) {
  const workload::Workload w =
      workload::build_megatron_workload(test::job_from_yaml(test::small_gpt_yaml(2, 1, 1, 1, "", training)));
  std::map<std::string, workload::Op> out;
  const auto& prog = w.programs.at(0);
  for (const auto& op : prog.ops) {
    const std::string name(prog.name(op));
    if (op.microbatch == 0 && (name.rfind("cross_entropy", 0) == 0 || name == "loss")) out.emplace(name, op);
  }
  return out;
}

// By hand: 1,024 tokens x a 16,000-logit shard (32,000 over TP 2), bf16 logits (2 bytes). TE (its Triton kernels as
// Megatron-Bridge 25.09-26.04 ran them): the statistics pass reads 2 B per logit, the loss-and-gradient pass reads 2 and
// writes 2 over the logits, the backward scales the gradient in place (2 + 2); the all-gather carries 3 fp32 per token
// from each of the 2 ranks (24,576 bytes); the logits buffer (2 B per logit) is what stays until the backward, where
// the unfused path keeps its fp32 softmax (4 B per logit).
TEST(CrossEntropyFusion, TeMovesTheBytesOfItsKernels) {
  const uint64_t logits = 1024ull * 16000;
  const auto te = loss_ops(", cross_entropy_fusion: te");
  ASSERT_TRUE(te.count("cross_entropy_stats") && te.count("cross_entropy_loss_grad") && te.count("cross_entropy_bwd") &&
              te.count("cross_entropy_all_gather"));
  EXPECT_FALSE(te.count("cross_entropy_max"));
  EXPECT_EQ(te.at("cross_entropy_stats").bytes, 2 * logits);
  EXPECT_EQ(te.at("cross_entropy_loss_grad").bytes, 4 * logits);
  EXPECT_EQ(te.at("cross_entropy_bwd").bytes, 4 * logits);
  EXPECT_EQ(te.at("cross_entropy_all_gather").bytes, 12u * 1024 * 2);
  EXPECT_EQ(te.at("cross_entropy_all_gather").coll, workload::CollType::AllGather);
  EXPECT_EQ(te.at("cross_entropy_loss_grad").mem_alloc_at_start, int64_t(2 * logits));
  // Working buffers (docs/MODEL.md §9): before the second pass stores them, the bf16 logits and the gathered input of
  // the output layer (1,024 tokens x 1,024 hidden, 2 B) are held while the statistics pass runs; TE's backward writes
  // in place. The unfused path holds the bf16 logits beside their fp32 copy, and in backward the bf16 gradient
  // beside the fp32 softmax.
  const int64_t input = 2 * 1024 * 1024;
  EXPECT_EQ(te.at("cross_entropy_stats").mem_transient, int64_t(2 * logits) + input);
  EXPECT_EQ(te.at("cross_entropy_bwd").mem_transient, 0);
  const auto unfused = loss_ops("");
  EXPECT_EQ(unfused.at("cross_entropy_max").mem_alloc_at_start - unfused.at("cross_entropy_max").mem_transient,
            int64_t(4 * logits));
  EXPECT_EQ(unfused.at("cross_entropy_max").mem_transient, int64_t(2 * logits) + input);
  EXPECT_EQ(unfused.at("cross_entropy_bwd").mem_transient, int64_t(2 * logits));
  EXPECT_EQ(unfused.at("cross_entropy_max").bytes + unfused.at("cross_entropy_softmax").bytes +
                unfused.at("cross_entropy_bwd").bytes,
            20 * logits);
  // Megatron's jit-fused native path is costed as the unfused one.
  const auto native = loss_ops(", cross_entropy_fusion: native");
  EXPECT_EQ(native.at("cross_entropy_max").bytes, unfused.at("cross_entropy_max").bytes);
  // The step gets faster, by at most the unfused loss's time (its 20 B per logit at the loss efficiency).
  auto step = [](const std::string& training) {
    return double(sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(test::small_gpt_yaml(2, 1, 1, 1, "", training)), {})
                      .result.step_ns) * 1e-9;
  };
  const double base = step(""), fused = step(", cross_entropy_fusion: te");
  EXPECT_LT(fused, base);
  EXPECT_LT(base - fused, 20.0 * logits / (3.35e12 * 0.29));
  EXPECT_NE(test::job_error(test::small_gpt_yaml(2, 1, 1, 1, "", ", cross_entropy_fusion: liger"))
                .find("training.cross_entropy_fusion"),
            std::string::npos);
}

// Megatron runs --cross-entropy-fusion-impl (native by default) only under --cross-entropy-loss-fusion.
TEST(CrossEntropyFusion, MegatronFlagsSetTheJobKey) {
  const std::string base =
      "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8 ";
  auto fusion = [&](const std::string& flags) {
    const YAML::Node t = spec::megatron_args_to_job_node(base + flags)["training"];
    return t["cross_entropy_fusion"] ? t["cross_entropy_fusion"].as<std::string>() : std::string("(absent)");
  };
  EXPECT_EQ(fusion(""), "(absent)");
  EXPECT_EQ(fusion("--cross-entropy-loss-fusion"), "native");
  EXPECT_EQ(fusion("--cross-entropy-loss-fusion --cross-entropy-fusion-impl te"), "te");
  EXPECT_EQ(fusion("--cross-entropy-fusion-impl te"), "(absent)");
}

// validate: Megatron-Bridge's benchmark recipes run TE's cross-entropy (bench/validation/README.md cites them);
// NeMo 24.07's rows keep the unfused path.
TEST(CrossEntropyFusion, MegatronBridgeRowsRunTheTeKernel) {
  const auto runs =
      validate::read_published_runs(test::source_dir() + "/bench/validation/nvidia-h100-benchmarks.csv");
  int bridge = 0;
  for (const auto& r : runs) {
    const auto j = validate::job_for_run(stepsim::catalog::shipped().gpus, r);
    const bool is_bridge = r.source.rfind("MegatronBridge", 0) == 0;
    bridge += is_bridge;
    if (is_bridge) {
      EXPECT_EQ(j.root["training"]["cross_entropy_fusion"].as<std::string>(), "te") << r.id;
    } else {
      EXPECT_FALSE(j.root["training"]["cross_entropy_fusion"]) << r.id;
    }
  }
  EXPECT_EQ(bridge, 9);
}

}  // namespace
}  // namespace stepsim
