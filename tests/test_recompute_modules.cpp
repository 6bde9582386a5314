// Selective recompute by module (issue 13 item 1g; Megatron-Core's recompute_modules / --recompute-modules): each
// module's stored bytes and recompute ops counted by hand from the job (beta = 2 bytes, no TP).
#include <gtest/gtest.h>

#include <map>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/megatron_args.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

constexpr int64_t MiB = 1 << 20;

// One GPT layer, h 1024, GELU FFN 4096, s 1024, b 1, one GPU: T h beta = 2 MiB.
std::string dense_job(const std::string& training) {
  return "model: {name: g, num_layers: 1, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
         " vocab_size: 32000, seq_length: 1024}\n"
         "parallelism: {data: 1}\n"
         "training: {micro_batch_size: 1, global_batch_size: 1, " + training + "}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 1, gpus_per_node: 1}\n";
}

// One MoE layer: 8 experts of FFN 512 (SwiGLU), top 2, EP 2 on 2 GPUs; routed tokens per rank 2 T = 2048.
std::string moe_job(const std::string& training, const std::string& extra_moe = "") {
  return "model: {name: m, num_layers: 1, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
         " activation: swiglu, vocab_size: 32000, seq_length: 1024,"
         " moe: {num_experts: 8, topk: 2, ffn_hidden_size: 512" + extra_moe + "}}\n"
         "parallelism: {expert: 2}\n"
         "training: {micro_batch_size: 1, global_batch_size: 2, " + training + "}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 2, gpus_per_node: 2}\n";
}

struct Layer0 {
  int64_t stored = 0;                       // forward allocations of layer 0
  std::map<std::string, int> recomputed;    // ops in the recompute phase, by name
  int recompute_collectives = 0;
};

Layer0 layer0(const std::string& yaml) {
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
  const workload::Program& p = w.programs[0];
  Layer0 r;
  for (const auto& op : p.ops) {
    if (op.layer != 0 || op.microbatch != 0) continue;
    if (op.phase == workload::Phase::Forward) r.stored += op.mem_alloc_at_start - op.mem_transient;
    if (op.phase == workload::Phase::Recompute) {
      ++r.recomputed[p.name(op)];
      if (op.kind == workload::OpKind::Collective) ++r.recompute_collectives;
    }
  }
  return r;
}

TEST(RecomputeModules, DefaultIsCoreAttentionAlone) {
  const Layer0 sel = layer0(dense_job("recompute: selective"));
  const Layer0 listed = layer0(dense_job("recompute: selective, recompute_modules: [core_attn]"));
  EXPECT_EQ(sel.recomputed, listed.recomputed);
  EXPECT_EQ(sel.stored, listed.stored);
  ASSERT_EQ(sel.recomputed.size(), 1u);
  EXPECT_EQ(sel.recomputed.begin()->first, "core_attention_recompute");
}

TEST(RecomputeModules, MlpKeepsFc1InputAndRerunsTheBody) {
  const Layer0 attn = layer0(dense_job("recompute: selective"));
  const Layer0 mlp = layer0(dense_job("recompute: selective, recompute_modules: [core_attn, mlp]"));
  // Not stored any more: the GELU's input (T x 4096 x 2 B = 8 MiB) and fc2's input (8 MiB).
  EXPECT_EQ(attn.stored - mlp.stored, 16 * MiB);
  EXPECT_EQ(mlp.recomputed.at("fc1"), 1);
  EXPECT_EQ(mlp.recomputed.at("gelu"), 1);
  EXPECT_EQ(mlp.recomputed.at("fc2"), 1);
  EXPECT_EQ(mlp.recomputed.at("core_attention_recompute"), 1);
  EXPECT_EQ(mlp.recomputed.size(), 4u);
}

TEST(RecomputeModules, LayernormDiscardsBothNormOutputs) {
  const Layer0 attn = layer0(dense_job("recompute: selective"));
  const Layer0 ln = layer0(dense_job("recompute: selective, recompute_modules: [layernorm]"));
  // qkv_proj's and fc1's stored input (each T h beta = 2 MiB) go; core attention is no longer recomputed.
  EXPECT_EQ(attn.stored - ln.stored, 4 * MiB);
  EXPECT_EQ(ln.recomputed.at("input_layernorm_recompute"), 1);
  EXPECT_EQ(ln.recomputed.at("pre_mlp_layernorm_recompute"), 1);
  EXPECT_EQ(ln.recomputed.size(), 2u);
}

TEST(RecomputeModules, MoeActAndWholeMoeLayer) {
  const Layer0 none = layer0(moe_job("recompute: none"));
  const Layer0 act = layer0(moe_job("recompute: selective, recompute_modules: [moe_act]"));
  const Layer0 moe = layer0(moe_job("recompute: selective, recompute_modules: [moe]"));
  // moe_act: fc2's input, the activation output, 2048 routed tokens x 512 x 2 B = 2 MiB.
  EXPECT_EQ(none.stored - act.stored, 2 * MiB);
  EXPECT_EQ(act.recomputed.at("expert_act_recompute"), 1);
  EXPECT_EQ(act.recomputed.size(), 1u);
  // moe: all but the router's input: top-k scores 4 T E = 32 KiB, expert_fc1's input 2048 x 1024 x 2 = 4 MiB, the
  // SwiGLU's input 2048 x 1024 x 2 = 4 MiB, fc2's input 2 MiB.
  EXPECT_EQ(none.stored - moe.stored, 10 * MiB + 4 * 1024 * 8);
  // The whole layer re-runs, its token-count all-gather and dispatch and combine all-to-alls included.
  EXPECT_EQ(moe.recompute_collectives, 3);
  EXPECT_EQ(moe.recomputed.at("router"), 1);
  EXPECT_EQ(moe.recomputed.at("expert_fc2"), 1);
}

TEST(RecomputeModules, SharedExperts) {
  const std::string shared = ", shared_expert_ffn_hidden_size: 1024";
  const Layer0 none = layer0(moe_job("recompute: none", shared));
  const Layer0 sx = layer0(moe_job("recompute: selective, recompute_modules: [shared_experts]", shared));
  // The shared expert's SwiGLU input (T x 2048 x 2 B = 4 MiB) and fc2's input (T x 1024 x 2 B = 2 MiB).
  EXPECT_EQ(none.stored - sx.stored, 6 * MiB);
  EXPECT_EQ(sx.recomputed.at("shared_expert_fc1"), 1);
  EXPECT_EQ(sx.recomputed.at("shared_expert_fc2"), 1);
}

TEST(RecomputeModules, MlaUpProjection) {
  const std::string mla =
      "model: {name: d, num_layers: 1, hidden_size: 1024, num_attention_heads: 8, ffn_hidden_size: 4096,"
      " vocab_size: 32000, seq_length: 1024, attention: {type: mla, q_lora_rank: 256, kv_lora_rank: 128,"
      " qk_nope_head_dim: 64, qk_rope_head_dim: 32, v_head_dim: 64}}\n"
      "parallelism: {data: 1}\ncluster: {gpu: H100-SXM, num_gpus: 1, gpus_per_node: 1}\n"
      "training: {micro_batch_size: 1, global_batch_size: 1, recompute: selective, recompute_modules: [";
  const Layer0 attn = layer0(mla + "core_attn]}\n");
  const Layer0 up = layer0(mla + "mla_up_proj]}\n");
  // Q: 8 heads x 96 = 768, K+V: 8 x (96 + 64) = 1280 columns of T = 1024 tokens x 2 B.
  EXPECT_EQ(attn.stored - up.stored, 1024 * (768 + 1280) * 2);
  EXPECT_EQ(up.recomputed.at("q_up_proj_recompute"), 1);
  EXPECT_EQ(up.recomputed.at("kv_up_proj_recompute"), 1);
}

TEST(RecomputeModules, BadListsNameTheKey) {
  auto err = [](const std::string& yaml) { return test::job_error(yaml); };
  std::string e = err(dense_job("recompute: selective, recompute_modules: [core_attn, mlpp]"));
  EXPECT_NE(e.find("training.recompute_modules"), std::string::npos) << e;
  EXPECT_NE(e.find("mlpp"), std::string::npos) << e;
  e = err(dense_job("recompute: selective, recompute_modules: [mlp, mlp]"));
  EXPECT_NE(e.find("listed twice"), std::string::npos) << e;
  e = err(dense_job("recompute: full, recompute_modules: [mlp]"));
  EXPECT_NE(e.find("recompute: selective"), std::string::npos) << e;
  e = err(dense_job("recompute: selective, recompute_modules: [moe_act]"));
  EXPECT_NE(e.find("needs an MoE model"), std::string::npos) << e;
  e = err(dense_job("recompute: selective, recompute_modules: [mla_up_proj]"));
  EXPECT_NE(e.find("multi-latent"), std::string::npos) << e;
  e = err(dense_job("recompute: selective, recompute_modules: mlp"));
  EXPECT_NE(e.find("must be a list"), std::string::npos) << e;
}

TEST(RecomputeModules, MegatronArgsMapTheList) {
  const std::string base =
      "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8 ";
  const YAML::Node j =
      spec::megatron_args_to_job_node(base + "--recompute-granularity selective --recompute-modules core_attn mlp");
  ASSERT_TRUE(j["training"]["recompute_modules"].IsSequence());
  EXPECT_EQ(j["training"]["recompute_modules"][1].as<std::string>(), "mlp");
  // The deprecated --moe-layer-recompute is selective recompute with 'moe' added to Megatron-Core's default list.
  const YAML::Node legacy = spec::megatron_args_to_job_node(base + "--moe-layer-recompute");
  EXPECT_EQ(legacy["training"]["recompute"].as<std::string>(), "selective");
  ASSERT_EQ(legacy["training"]["recompute_modules"].size(), 2u);
  EXPECT_EQ(legacy["training"]["recompute_modules"][0].as<std::string>(), "core_attn");
  EXPECT_EQ(legacy["training"]["recompute_modules"][1].as<std::string>(), "moe");
  EXPECT_THROW(spec::megatron_args_to_job_node(base + "--moe-layer-recompute --recompute-granularity full"), InputError);
  try {
    spec::megatron_args_to_job_node(base + "--recompute-modules mlp");
    FAIL() << "no error without selective granularity";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--recompute-modules"), std::string::npos) << e.what();
  }
  try {
    spec::megatron_args_to_job_node(base + "--recompute-granularity selective --recompute-modules attention");
    FAIL() << "no error for an unknown module";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("attention"), std::string::npos) << e.what();
  }
  // The flag with no modules (argparse's nargs='*' gives []) recomputes none; the last flag of the line once read
  // its missing first value (the fuzzer's find).
  const YAML::Node none = spec::megatron_args_to_job_node(base + "--recompute-granularity selective --recompute-modules");
  ASSERT_TRUE(none["training"]["recompute_modules"].IsSequence());
  EXPECT_EQ(none["training"]["recompute_modules"].size(), 0u);
  EXPECT_THROW(spec::megatron_args_to_job_node("--recompute-modules"), InputError);
}

}  // namespace
}  // namespace stepsim
