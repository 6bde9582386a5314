// Multi-token prediction (issue 13 item 1c, issue 15 item 6): model.mtp_layers (Megatron's --mtp-num-layers, HF
// num_nextn_predict_layers) adds, on the last stage, per depth an embedding, two norms, eh_proj (2h -> h), one
// transformer layer and a second pass through the output layer and loss. Counts and parameters by hand.
#include <gtest/gtest.h>

#include "stepsim/sim/simulation.hpp"
#include "stepsim/spec/megatron_args.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/model_dims.hpp"
#include "test_util.hpp"

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
  EXPECT_GT(sim::run_simulation(test::job_from_yaml(mtp_job(1)), {0}).result.step_ns,
            sim::run_simulation(test::job_from_yaml(mtp_job(0)), {0}).result.step_ns);
}

TEST(Mtp, MegatronArgsMapTheDepth) {
  const YAML::Node j = spec::megatron_args_to_job_node(
      "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8 --mtp-num-layers 2");
  EXPECT_EQ(j["model"]["mtp_layers"].as<int>(), 2);
}

}  // namespace
}  // namespace stepsim
