// Unfused attention (training.attention_backend: unfused, Megatron-LM before FlashAttention; issue 13 item 1e): the
// ops of one layer and micro-batch checked by hand on the small GPT job (h 1024, 16 heads of 64, s 1024, b 1, TP 1,
// bf16: beta 2), docs/MODEL.md §12a "Unfused attention".
#include <gtest/gtest.h>

#include <map>

#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

// The first layer's ops of one phase, by name (a name repeats per layer and micro-batch: the first one is kept).
std::map<std::string, workload::Op> first_ops(const workload::Program& p, workload::Phase phase) {
  std::map<std::string, workload::Op> out;
  for (const workload::Op& op : p.ops) {
    if (op.phase == phase) out.emplace(p.name(op), op);
  }
  return out;
}

spec::JobSpec attention_job(const std::string& training) {
  return test::job_from_yaml(test::small_gpt_yaml(1, 1, 1, 1, "", training));
}

TEST(UnfusedAttention, ScoresSoftmaxDropoutAndContextAsSeparateKernels) {
  const workload::Workload w = workload::build_megatron_workload(attention_job(", attention_backend: unfused"));
  const auto fwd = first_ops(w.programs[0], workload::Phase::Forward);
  const auto bwd = first_ops(w.programs[0], workload::Phase::Backward);
  const double gemm_flops = 2.0 * 16 * 1024 * 1024 * 64;  // one batched s x s x d GEMM over 16 heads
  const uint64_t scores = 16ull * 1024 * 1024;             // b x heads x s x s
  EXPECT_EQ(fwd.count("core_attention"), 0u);
  EXPECT_DOUBLE_EQ(fwd.at("attention_scores").flops, gemm_flops);
  EXPECT_DOUBLE_EQ(fwd.at("attention_context").flops, gemm_flops);  // the full s x s: causal masking saves nothing
  EXPECT_EQ(fwd.at("scale_mask_softmax").bytes, 2 * 2 * scores);          // read and write the bf16 scores
  EXPECT_EQ(fwd.at("attention_dropout").bytes, (2 * 2 + 1) * scores);     // and the 1-byte mask
  // Stored for backward: Q, K, V (2 B x 1024 tokens x 3072) and 5 B per score (probabilities, mask, dropped ones).
  EXPECT_EQ(fwd.at("attention_scores").mem_alloc_at_start, int64_t(2 * 1024 * 3072));
  EXPECT_EQ(fwd.at("scale_mask_softmax").mem_alloc_at_start + fwd.at("attention_dropout").mem_alloc_at_start,
            int64_t(5 * scores));
  // Backward: four batched GEMMs (dV, dP, dQ, dK), twice the forward's GEMM FLOPs, and the two score passes.
  double bwd_flops = 0;
  for (const char* g : {"attention_context_dgrad_v", "attention_context_dgrad_probs", "attention_scores_dgrad_q",
                        "attention_scores_dgrad_k"})
    bwd_flops += bwd.at(g).flops;
  EXPECT_DOUBLE_EQ(bwd_flops, 4 * gemm_flops);
  EXPECT_EQ(bwd.at("attention_dropout_bwd").bytes, 5 * scores);
  EXPECT_EQ(bwd.at("scale_mask_softmax_bwd").bytes, 6 * scores);
}

// model.attention_dropout 0 (Llama-style and DeepSeek models; the default for gated MLPs): PyTorch's dropout at p = 0
// returns its input (ATen `_dropout`), so no dropout kernel runs either way and only the probabilities are stored, 2 B
// per score instead of 5.
TEST(UnfusedAttention, NoDropoutKernelsOrMaskAtZeroAttentionDropout) {
  std::string yaml = test::small_gpt_yaml(1, 1, 1, 1, "", ", attention_backend: unfused");
  yaml.replace(yaml.find("seq_length: 1024}"), 17, "seq_length: 1024, attention_dropout: 0}");
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
  const auto fwd = first_ops(w.programs[0], workload::Phase::Forward);
  const auto bwd = first_ops(w.programs[0], workload::Phase::Backward);
  const uint64_t scores = 16ull * 1024 * 1024;
  EXPECT_EQ(fwd.count("attention_dropout"), 0u);
  EXPECT_EQ(bwd.count("attention_dropout_bwd"), 0u);
  EXPECT_EQ(fwd.at("scale_mask_softmax").mem_alloc_at_start, int64_t(2 * scores));
  EXPECT_EQ(bwd.at("scale_mask_softmax_bwd").bytes, 6 * scores);
  // The model reads the key as given; a GELU model without it keeps Megatron's 0.1 (the test above).
  EXPECT_EQ(test::job_from_yaml(yaml).model.attention_dropout, 0.0);
  EXPECT_EQ(attention_job("").model.attention_dropout, 0.1);
}

TEST(UnfusedAttention, SelectiveRecomputeDropsTheScoresAndReRunsThem) {
  const workload::Workload w =
      workload::build_megatron_workload(attention_job(", attention_backend: unfused, recompute: selective"));
  const auto fwd = first_ops(w.programs[0], workload::Phase::Forward);
  const auto rec = first_ops(w.programs[0], workload::Phase::Recompute);
  EXPECT_EQ(fwd.at("scale_mask_softmax").mem_alloc_at_start, 0);
  EXPECT_EQ(fwd.at("attention_dropout").mem_alloc_at_start, 0);
  EXPECT_EQ(fwd.at("attention_scores").mem_alloc_at_start, int64_t(2 * 1024 * 3072));  // Q, K, V stay
  // The recompute re-runs scores, softmax and dropout but not the context GEMM.
  EXPECT_EQ(rec.count("attention_scores"), 1u);
  EXPECT_EQ(rec.count("scale_mask_softmax"), 1u);
  EXPECT_EQ(rec.count("attention_dropout"), 1u);
  EXPECT_EQ(rec.count("attention_context"), 0u);
}

}  // namespace
}  // namespace stepsim
