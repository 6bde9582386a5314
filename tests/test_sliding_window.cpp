// Sliding-window attention (issue 43 item 3): model.attention.window_size and window_attn_skip_freq as Megatron-Core
// reads --window-size W,0 and --window-attn-skip-freq, the same from Megatron flags and from a Hugging Face config,
// what a windowed layer's flash attention costs (counted by hand below), and what is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/input/hf_config.hpp"
#include "stepsim/input/megatron_args.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace sliding_window_test {

// 4 layers, h 1024, 16 heads of 64 (MHA), seq 1024, one GPU, micro-batch 1.
std::string swa_yaml(const std::string& attention, const std::string& parallelism = "",
                     const std::string& training = "") {
  return "model: {name: tiny-swa, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 2816,"
         " activation: swiglu, normalization: rmsnorm, vocab_size: 32000, seq_length: 1024" +
         (attention.empty() ? "" : ", attention: {" + attention + "}") + "}\n" +
         "parallelism: {data: 1" + parallelism + "}\n" +
         "training: {micro_batch_size: 1, global_batch_size: 1" + training + "}\n" +
         "simulation: {host_time_scale: 0}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 1}\n";
}

// The FLOPs of every op of that name in issue order (one per layer).
std::vector<double> flops_of(const std::string& yaml, const std::string& name) {
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
  const workload::Program& p = w.programs[0];
  std::vector<double> out;
  for (const workload::Op& op : p.ops) {
    if (p.name(op) == name) out.push_back(op.flops);
  }
  return out;
}

TEST(SlidingWindow, AWindowedLayerComputesTheWindowsPairsOnly) {
  // Full causal attention over s = 1024: s(s+1)/2 = 524,800 (query, key) pairs per head. A window of 255 keys before
  // the query: 255 x 256 / 2 = 32,640 for the first 255 queries' prefixes plus (1024 - 255) x 256 = 196,864, i.e.
  // 229,504 pairs: 0.437317 of the causal work, forward and backward alike.
  const std::vector<double> full = flops_of(swa_yaml(""), "core_attention");
  const std::vector<double> windowed = flops_of(swa_yaml("window_size: 255"), "core_attention");
  ASSERT_EQ(full.size(), 4u);
  ASSERT_EQ(windowed.size(), 4u);
  for (size_t l = 0; l < 4; ++l) EXPECT_NEAR(windowed[l] / full[l], 229504.0 / 524800.0, 1e-12) << l;
  const std::vector<double> full_bwd = flops_of(swa_yaml(""), "core_attention_bwd");
  const std::vector<double> windowed_bwd = flops_of(swa_yaml("window_size: 255"), "core_attention_bwd");
  ASSERT_EQ(windowed_bwd.size(), 4u);
  EXPECT_NEAR(windowed_bwd[0] / full_bwd[0], 229504.0 / 524800.0, 1e-12);
  // A window as long as the sequence is full causal attention, to the FLOP.
  EXPECT_EQ(flops_of(swa_yaml("window_size: 1023"), "core_attention"), full);
  EXPECT_EQ(flops_of(swa_yaml("window_size: 100000"), "core_attention"), full);
}

TEST(SlidingWindow, SkipFrequencyAndListsChooseTheFullLayers) {
  const double share = 229504.0 / 524800.0;
  const std::vector<double> full = flops_of(swa_yaml(""), "core_attention");
  // Megatron-Core's is_layer_window_attention: an int N makes layer_number % N == 0 (1-based) a full layer, so
  // N = 2 windows layers 0 and 2 (0-based) and keeps 1 and 3 full.
  const std::vector<double> every2 = flops_of(swa_yaml("window_size: 255, window_attn_skip_freq: 2"), "core_attention");
  ASSERT_EQ(every2.size(), 4u);
  EXPECT_NEAR(every2[0] / full[0], share, 1e-12);
  EXPECT_EQ(every2[1], full[1]);
  EXPECT_NEAR(every2[2] / full[2], share, 1e-12);
  EXPECT_EQ(every2[3], full[3]);
  // A list gives each layer (1 = window).
  const std::vector<double> listed =
      flops_of(swa_yaml("window_size: 255, window_attn_skip_freq: [0, 0, 1, 1]"), "core_attention");
  EXPECT_EQ(listed[0], full[0]);
  EXPECT_EQ(listed[1], full[1]);
  EXPECT_NEAR(listed[3] / full[3], share, 1e-12);
  const spec::JobSpec j = test::job_from_yaml(swa_yaml("window_size: 255, window_attn_skip_freq: 2"));
  EXPECT_EQ(j.model.window_layer_count(), 2);
}

TEST(SlidingWindow, TheStepGetsShorterByTheAttentionItSkips) {
  auto step = [](const std::string& yaml) {
    return sim::run_simulation(catalog::shipped(), test::job_from_yaml(yaml), {0}).result.step_ns;
  };
  const int64_t full = step(swa_yaml(""));
  const int64_t windowed = step(swa_yaml("window_size: 127"));
  EXPECT_LT(windowed, full);
  EXPECT_GT(windowed, full / 2);  // the GEMMs are untouched
}

TEST(SlidingWindow, WhatIsNotModelledIsRefusedByKey) {
  auto error = [](const std::string& yaml) { return test::job_error(yaml); };
  EXPECT_NE(error(swa_yaml("window_attn_skip_freq: 2")).find("key model.attention.window_attn_skip_freq: needs "
                                                             "model.attention.window_size"),
            std::string::npos);
  EXPECT_NE(error(swa_yaml("window_size: 255, window_attn_skip_freq: [1, 0]"))
                .find("a list needs one 0 or 1 per layer: 2 given, model.num_layers is 4"),
            std::string::npos);
  EXPECT_NE(error(swa_yaml("window_size: 255, window_attn_skip_freq: [1, 0, 2, 1]")).find("window_attn_skip_freq"),
            std::string::npos);
  EXPECT_NE(error(swa_yaml("window_size: 0")).find("window_size"), std::string::npos);
  // The context-parallel ring's skipped blocks are not modelled.
  const std::string cp = swa_yaml("window_size: 255", ", context: 2").replace(
      swa_yaml("window_size: 255", ", context: 2").find("num_gpus: 1"), 11, "num_gpus: 2");
  EXPECT_NE(error(cp).find("key model.attention.window_size: sliding-window attention under context parallelism is "
                           "not modelled"),
            std::string::npos);
  EXPECT_NE(error(swa_yaml("window_size: 255", "", ", framework: torchtitan"))
                .find("key model.attention.window_size: torchtitan's Llama 3 has no sliding-window attention"),
            std::string::npos);
}

TEST(SlidingWindow, MegatronFlagsGiveTheSameKeys) {
  const std::string base = "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 "
                           "--micro-batch-size 1 --global-batch-size 8 ";
  YAML::Node j = spec::megatron_args_to_job_node(base + "--window-size 128,0 --window-attn-skip-freq 2");
  EXPECT_EQ(j["model"]["attention"]["window_size"].as<int64_t>(), 128);
  EXPECT_EQ(j["model"]["attention"]["window_attn_skip_freq"].as<int64_t>(), 2);
  j = spec::megatron_args_to_job_node(base + "--window-size 128,0 --window-attn-skip-freq ([1]*3+[0])");
  ASSERT_TRUE(j["model"]["attention"]["window_attn_skip_freq"].IsSequence());
  EXPECT_EQ(j["model"]["attention"]["window_attn_skip_freq"].size(), 4u);
  EXPECT_EQ(j["model"]["attention"]["window_attn_skip_freq"][3].as<int>(), 0);
  // -1 is Megatron's infinite window: no window.
  EXPECT_FALSE(spec::megatron_args_to_job_node(base + "--window-size -1,0")["model"]["attention"]["window_size"]);
  auto message = [&](const std::string& extra) {
    try {
      spec::megatron_args_to_job_node(base + extra);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("--window-size 128,128").find("only causal windows (RIGHT 0) are modelled"), std::string::npos);
  EXPECT_NE(message("--window-size 128").find("must be LEFT,RIGHT"), std::string::npos);
  EXPECT_NE(message("--window-attn-skip-freq 2").find("needs --window-size"), std::string::npos);
  EXPECT_NE(message("--window-size 128,0 --window-attn-skip-freq [1,0]").find("pattern has 2 entries"),
            std::string::npos);
}

TEST(SlidingWindow, HuggingFaceConfigsGiveTheirWindowedLayers) {
  const std::string llama_like =
      "\"hidden_size\": 256, \"num_attention_heads\": 8, \"num_key_value_heads\": 8, \"intermediate_size\": 512,"
      " \"num_hidden_layers\": 4, \"vocab_size\": 1000, \"max_position_embeddings\": 2048, \"hidden_act\": \"silu\","
      " \"tie_word_embeddings\": false";
  // Mistral: every layer, sliding_window keys with the query itself (4095 before it).
  YAML::Node m = spec::hf_config_to_model_node(
      "{\"model_type\": \"mistral\", " + llama_like + ", \"sliding_window\": 4096}", "mistral.json");
  EXPECT_EQ(m["attention"]["window_size"].as<int64_t>(), 4095);
  EXPECT_FALSE(m["attention"]["window_attn_skip_freq"]);
  // layer_types names each layer.
  m = spec::hf_config_to_model_node("{\"model_type\": \"mistral\", " + llama_like +
                                        ", \"sliding_window\": 128, \"layer_types\": [\"sliding_attention\", "
                                        "\"full_attention\", \"sliding_attention\", \"full_attention\"]}",
                                    "m.json");
  ASSERT_TRUE(m["attention"]["window_attn_skip_freq"].IsSequence());
  EXPECT_EQ(m["attention"]["window_attn_skip_freq"][0].as<int>(), 1);
  EXPECT_EQ(m["attention"]["window_attn_skip_freq"][1].as<int>(), 0);
  // Qwen2: off unless use_sliding_window; then the layers from max_window_layers on.
  m = spec::hf_config_to_model_node("{\"model_type\": \"qwen2\", " + llama_like + ", \"sliding_window\": 4096}",
                                    "q.json");
  EXPECT_FALSE(m["attention"]["window_size"]);
  m = spec::hf_config_to_model_node("{\"model_type\": \"qwen2\", " + llama_like +
                                        ", \"sliding_window\": 4096, \"use_sliding_window\": true, "
                                        "\"max_window_layers\": 2}",
                                    "q.json");
  ASSERT_TRUE(m["attention"]["window_attn_skip_freq"].IsSequence());
  EXPECT_EQ(m["attention"]["window_attn_skip_freq"][1].as<int>(), 0);
  EXPECT_EQ(m["attention"]["window_attn_skip_freq"][2].as<int>(), 1);
  EXPECT_THROW(spec::hf_config_to_model_node("{\"model_type\": \"mistral\", " + llama_like +
                                                 ", \"sliding_window\": 128, \"layer_types\": [\"local\"]}",
                                             "m.json"),
               InputError);
}

}  // namespace sliding_window_test
}  // namespace stepsim
