// The DeepSpeed framework profile (training.framework: deepspeed): ZeRO-3 around Hugging Face's Llama. Its module
// hooks (host time the GPU waits for), its gradient buckets (reduce_bucket_size, in backward order, in the parameter
// dtype), the eager kernels it shares with torchtitan's eager profile, and what it refuses. Every count below is
// worked by hand from ds_yaml(): 2 layers, h 1024, 16 heads of 64 (4 KV groups), ffn 2816, vocab 32000, DP 2.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

constexpr int64_t kDsH = 1024, kDsFfn = 2816, kDsKv = 4 * 64, kDsVocab = 32000;

std::string ds_yaml(const std::string& training, const std::string& parallelism = "") {
  return "model: {name: tiny-llama, num_layers: 2, hidden_size: 1024, num_attention_heads: 16, num_query_groups: 4,"
         " ffn_hidden_size: 2816, activation: swiglu, normalization: rmsnorm, vocab_size: 32000, seq_length: 1024}\n"
         "parallelism: {data: 2" + parallelism + "}\n"
         "training: {micro_batch_size: 1, global_batch_size: 2, precision: bf16, framework: deepspeed, zero_stage: 3" +
         (training.empty() ? "" : ", " + training) + "}\n"
         "simulation: {host_time_scale: 0}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 2}\n";
}

workload::Workload build_ds(const std::string& yaml) { return workload::build_megatron_workload(test::job_from_yaml(yaml)); }

// Copies: the workload a test builds in the same expression is gone by the time they are read.
std::vector<workload::Op> ops_named(const workload::Program& p, const std::string& name) {
  std::vector<workload::Op> out;
  for (const workload::Op& op : p.ops) {
    if (p.name(op) == name) out.push_back(op);
  }
  return out;
}

TEST(FrameworkDeepSpeed, EachUnitAndPassWaitsForItsModulesHooks) {
  // One micro-batch: the embedding (3 modules: embed_tokens, LlamaModel, LlamaForCausalLM), 2 decoder layers (14
  // modules each) and the head (norm, lm_head), each gathered and hooked once forward and once backward: 8 hook ops.
  // At 100 us per module: 300, 1400, 1400, 200 us per pass.
  const workload::Workload w = build_ds(ds_yaml("zero3_hook_us: 100"));
  const auto hooks = ops_named(w.programs[0], "zero3_module_hooks");
  ASSERT_EQ(hooks.size(), 8u);
  int64_t total = 0;
  std::vector<int64_t> durations;
  for (const workload::Op& op : hooks) {
    EXPECT_EQ(op.category, workload::ComputeCategory::Host);
    total += op.duration_ns;
    durations.push_back(op.duration_ns);
  }
  EXPECT_EQ(total, 2 * (300 + 1400 + 1400 + 200) * 1000);
  EXPECT_EQ(durations.front(), 300'000);  // the embedding's forward comes first
  // The profile's fitted value when the job sets none: 84 us per module and pass (docs/MODEL.md §12c).
  const auto fitted = ops_named(build_ds(ds_yaml("")).programs[0], "zero3_module_hooks");
  EXPECT_EQ(fitted.front().duration_ns, 3 * 84'000);
  // No hooks at 0 (FSDP-style ZeRO-3 then).
  EXPECT_TRUE(ops_named(build_ds(ds_yaml("zero3_hook_us: 0")).programs[0], "zero3_module_hooks").empty());
}

TEST(FrameworkDeepSpeed, GradientsAreReduceScatteredInBucketsInBackwardOrder) {
  // Hugging Face's tensors of a layer: q_proj 1024x1024, k_proj and v_proj 256x1024 each, o_proj 1024x1024,
  // gate_proj and up_proj 2816x1024 each, down_proj 1024x2816, two RMSNorm weights of 1024; the head: final norm plus
  // lm_head (one unit, 1024 + 32000x1024); the embedding 32000x1024. In bf16: 2 bytes per element.
  const int64_t layer = 2 * kDsH * kDsH + 2 * kDsKv * kDsH + 3 * kDsFfn * kDsH + 2 * kDsH;
  const int64_t head = kDsH + kDsVocab * kDsH, embedding = kDsVocab * kDsH;
  // A bucket larger than the model: one reduce-scatter of everything, at the backward's end.
  {
    const auto rs = ops_named(build_ds(ds_yaml("reduce_bucket_size: 1000000000")).programs[0], "sharded_grad_reduce_scatter");
    ASSERT_EQ(rs.size(), 1u);
    EXPECT_EQ(rs[0].bytes, static_cast<uint64_t>(2 * (head + 2 * layer + embedding)));
  }
  // A bucket of one element: every tensor alone: the head, 9 per layer, the embedding.
  {
    const auto rs = ops_named(build_ds(ds_yaml("reduce_bucket_size: 1")).programs[0], "sharded_grad_reduce_scatter");
    ASSERT_EQ(rs.size(), 1u + 2 * 9 + 1);
    EXPECT_EQ(rs[0].bytes, static_cast<uint64_t>(2 * head));
    EXPECT_EQ(rs.back().bytes, static_cast<uint64_t>(2 * embedding));
  }
  // A bucket of one layer's elements: the head (larger than the bucket) goes alone, flushed when layer 2's first
  // tensor arrives; layer 2's tensors then fill the bucket exactly, flushed when layer 1's first arrives; layer 1's
  // likewise when the embedding's arrives; the embedding at the backward's end.
  {
    const auto rs = ops_named(build_ds(ds_yaml("reduce_bucket_size: " + std::to_string(layer))).programs[0],
                              "sharded_grad_reduce_scatter");
    ASSERT_EQ(rs.size(), 4u);
    EXPECT_EQ(rs[0].bytes, static_cast<uint64_t>(2 * head));
    EXPECT_EQ(rs[1].bytes, static_cast<uint64_t>(2 * layer));
    EXPECT_EQ(rs[2].bytes, static_cast<uint64_t>(2 * layer));
    EXPECT_EQ(rs[3].bytes, static_cast<uint64_t>(2 * embedding));
  }
}

TEST(FrameworkDeepSpeed, KernelsAreHuggingFacesEagerOnes) {
  // HF's LlamaRMSNorm is the same chain of eager ops as torchtitan's: 36 B per element forward (a plain
  // elementwise kernel each), against Transformer Engine's one fused kernel (4 B).
  const workload::Workload w = build_ds(ds_yaml(""));
  const auto norm = ops_named(w.programs[0], "input_layernorm");
  ASSERT_FALSE(norm.empty());
  EXPECT_EQ(norm[0].bytes, static_cast<uint64_t>(36 * 1024 * kDsH));
  EXPECT_EQ(norm[0].category, workload::ComputeCategory::Elementwise);
}

TEST(FrameworkDeepSpeed, WhatTheProfileDoesNotCoverIsRefused) {
  auto refused = [](const std::string& yaml, const std::string& what) {
    try {
      (void)test::job_from_yaml(yaml);
      ADD_FAILURE() << "accepted: " << yaml;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused(ds_yaml("", ", tensor: 2"), "parallelism.tensor");
  refused(ds_yaml("tp_comm_overlap: true"), "tp_comm_overlap: is Megatron-Core's; framework deepspeed");
  refused(ds_yaml("compile: true"), "compile");
  // The same job with one piece of its text replaced, and what the refusal names.
  const std::vector<std::array<std::string, 4>> edits = {
      {"", "precision: bf16", "precision: fp8", "precision"},
      {"", "zero_stage: 3", "zero_stage: 2", "stages 0-2 are not yet"},
      {"reduce_bucket_size: 10", "framework: deepspeed", "framework: megatron", "reduce_bucket_size: is DeepSpeed's"},
      {"zero3_hook_us: 5", "framework: deepspeed", "framework: megatron", "zero3_hook_us"},
      {"", "activation: swiglu", "activation: swiglu, add_bias_linear: true", "model.add_bias_linear"},
  };
  for (const auto& [training, from, to, what] : edits) {
    std::string yaml = ds_yaml(training);
    yaml.replace(yaml.find(from), from.size(), to);
    refused(yaml, what);
  }
}

}  // namespace
}  // namespace stepsim
