// Multi-token prediction (issue 13 item 1c, issue 15 item 6): model.mtp_layers (Megatron's --mtp-num-layers, HF
// num_nextn_predict_layers) adds, on the last stage, per depth an embedding, two norms, eh_proj (2h -> h), one
// transformer layer and a second pass through the output layer and loss. Counts and parameters by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/input/megatron_args.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/model_dims.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

std::string mtp_job(int mtp) {
  return "model: {name: g, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
         " activation: swiglu, normalization: rmsnorm, add_bias_linear: false, position_embedding: rope,"
         " vocab_size: 32000, seq_length: 1024, mtp_layers: " + std::to_string(mtp) + "}\n"
         "parallelism: {pipeline: 2, data: 1}\n"
         "training: {micro_batch_size: 1, global_batch_size: 2, precision: bf16}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 2, gpus_per_node: 2}\n";
}

int count(const workload::Program& p, const std::string& name) {
  int n = 0;
  for (const auto& op : p.ops) n += p.name(op) == name;
  return n;
}

TEST(Mtp, LastStageRunsEachDepthWithItsOwnHead) {
  const workload::Workload w0 = workload::build_megatron_workload(test::job_from_yaml(mtp_job(0)));
  const workload::Workload w1 = workload::build_megatron_workload(test::job_from_yaml(mtp_job(1)));
  const workload::Program& last0 = w0.programs[1];
  const workload::Program& last1 = w1.programs[1];
  // 2 micro-batches: the output layer runs twice per micro-batch with one MTP depth, once without.
  EXPECT_EQ(count(last0, "output_layer"), 2);
  EXPECT_EQ(count(last1, "output_layer"), 4);
  EXPECT_EQ(count(last1, "mtp_eh_proj"), 2);
  EXPECT_EQ(count(last1, "mtp_eh_proj_dgrad"), 2);
  // One more transformer layer: 2 qkv projections per micro-batch on the last stage (layers 2, 3) become 3.
  EXPECT_EQ(count(last0, "qkv_proj"), 2 * 2);
  EXPECT_EQ(count(last1, "qkv_proj"), 2 * 3);
  // The first stage is untouched.
  EXPECT_EQ(w0.programs[0].ops.size(), w1.programs[0].ops.size());
  // Parameters on the last stage: + one layer (attention 4h^2 + SwiGLU 3 h f + 2 norms h), eh_proj 2h^2, three norms
  // h, and the word-embedding copy V h (the last stage is not the first).
  const int64_t h = 1024, f = 4096, V = 32000;
  const int64_t layer = 4 * h * h + 3 * h * f + 2 * h;
  EXPECT_EQ(last1.dense_parameters - last0.dense_parameters, layer + 2 * h * h + 3 * h + V * h);
  // total_parameters: the same depth, the embedding counted once.
  EXPECT_EQ(workload::total_parameters(test::job_from_yaml(mtp_job(1)).model) -
                workload::total_parameters(test::job_from_yaml(mtp_job(0)).model),
            layer + 2 * h * h + 3 * h);
  // And the step is slower: the last stage has more work.
  EXPECT_GT(sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(mtp_job(1)), {0}).result.step_ns,
            sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(mtp_job(0)), {0}).result.step_ns);
}

TEST(Mtp, MegatronArgsMapTheDepth) {
  const YAML::Node j = spec::megatron_args_to_job_node(
      "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8 --mtp-num-layers 2");
  EXPECT_EQ(j["model"]["mtp_layers"].as<int>(), 2);
}

// Issue 15 item 6, as a user meets it: a Hugging Face config with num_nextn_predict_layers and the same model as
// --megatron-args with --mtp-num-layers are one rule. Before the fix the first was accepted and ignored, the second
// refused. A small dense DeepSeek-V3-type config (MLA, no query compression, n_routed_experts null) is simple
// enough to count by hand: h 256, f 1024, 4 heads of nope 32 + rope 16, v 32, kv_lora 64.
//   MLA: q_proj h * 4 * 48 = 49,152; kv_a_proj h * (64 + 16) = 20,480; kv_a_layernorm 64; kv_b_proj 64 * 4 * (32 + 32)
//   = 16,384; o_proj 4 * 32 * h = 32,768 -> 118,848. SwiGLU 3 h f = 786,432. Two norms 2h = 512. Layer 905,792.
//   The MTP depth adds the layer, eh_proj 2h^2 = 131,072 and three norms 3h = 768: 1,037,632 parameters.
TEST(Mtp, HfConfigAndMegatronArgsAreOneRuleThroughTheCli) {
  const std::string dir = test::temp_dir() + "mtp-cli/";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "config.json")
      << R"({"model_type": "deepseek_v3", "hidden_size": 256, "intermediate_size": 1024, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1024, "max_position_embeddings": 1024,
 "hidden_act": "silu", "rms_norm_eps": 1e-6, "tie_word_embeddings": false, "attention_bias": false,
 "q_lora_rank": null, "kv_lora_rank": 64, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
 "n_routed_experts": null, "num_nextn_predict_layers": 1})";
  std::ofstream(dir + "job.yaml") << "model: {hf_config: config.json, seq_length: 1024}\n"
                                     "parallelism: {tensor: 1, pipeline: 1, data: 1}\n"
                                     "training: {micro_batch_size: 1, global_batch_size: 2, precision: bf16}\n"
                                     "cluster: {gpu: H100-SXM, num_gpus: 1, gpus_per_node: 1}\n";
  std::ofstream(dir + "c1.yaml") << "gpu: H100-SXM\nnum_gpus: 1\ngpus_per_node: 1\n";
  auto json_of = [](const std::string& path) { return nlohmann::json::parse(test::read_file(path)); };
  // The HF depth is modelled: its parameters are the hand count above.
  auto r = test::run_cli("memory " + dir + "job.yaml --json " + dir + "hf1.json");
  ASSERT_EQ(r.code, 0) << r.output;
  r = test::run_cli("memory " + dir + "job.yaml --set model.mtp_layers=0 --json " + dir + "hf0.json");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(json_of(dir + "hf1.json")["per_stage"][0]["parameters"].get<int64_t>() -
                json_of(dir + "hf0.json")["per_stage"][0]["parameters"].get<int64_t>(),
            1037632);
  // The same model as Megatron arguments (dropout 0 as the HF config has it): --mtp-num-layers 1 simulates to the
  // same step and memory as the HF config's depth, and differs from no depth.
  const std::string args =
      "--num-layers 2 --hidden-size 256 --ffn-hidden-size 1024 --num-attention-heads 4 --seq-length 1024 "
      "--max-position-embeddings 1024 --vocab-size 1024 --micro-batch-size 1 --global-batch-size 2 --bf16 --swiglu "
      "--normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights --position-embedding-type "
      "rope --multi-latent-attention --kv-lora-rank 64 --qk-head-dim 32 --qk-pos-emb-head-dim 16 --v-head-dim 32 "
      "--hidden-dropout 0 --attention-dropout 0";
  r = test::run_cli("simulate " + dir + "job.yaml --quiet --json " + dir + "hf.json");
  ASSERT_EQ(r.code, 0) << r.output;
  r = test::run_cli("simulate --megatron-args \"" + args + " --mtp-num-layers 1\" --cluster " + dir +
                    "c1.yaml --quiet --json " + dir + "ma1.json");
  ASSERT_EQ(r.code, 0) << r.output;
  r = test::run_cli("simulate --megatron-args \"" + args + "\" --cluster " + dir + "c1.yaml --quiet --json " + dir +
                    "ma0.json");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto hf = json_of(dir + "hf.json"), ma1 = json_of(dir + "ma1.json"), ma0 = json_of(dir + "ma0.json");
  EXPECT_EQ(hf["step_time_s"], ma1["step_time_s"]);
  EXPECT_EQ(hf["memory"]["per_stage"][0]["static_bytes"], ma1["memory"]["per_stage"][0]["static_bytes"]);
  EXPECT_EQ(hf["memory"]["per_stage"][0]["activation_bytes"], ma1["memory"]["per_stage"][0]["activation_bytes"]);
  EXPECT_LT(ma0["step_time_s"].get<double>(), ma1["step_time_s"].get<double>());
  EXPECT_LT(ma0["memory"]["per_stage"][0]["static_bytes"].get<int64_t>(),
            ma1["memory"]["per_stage"][0]["static_bytes"].get<int64_t>());
}

}  // namespace
}  // namespace stepsim
