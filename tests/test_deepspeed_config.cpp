// --deepspeed-config: a DeepSpeed config (JSON) with the model's Hugging Face config.json and a cluster becomes the job
// DeepSpeed would run (framework deepspeed, ZeRO-3, data parallelism over every GPU). The batch rule is DeepSpeed's
// (runtime/config.py: train_batch_size = micro-batch x gradient accumulation x world size); each key is modelled,
// refused by name or named in a `read:` note.
#include <gtest/gtest.h>

#include <string>

#include "stepsim/api/job_input.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

constexpr const char* kA800 = "gpu: A800-SXM4-80GB\nnum_gpus: 8\ngpus_per_node: 8\nintra_node: {bandwidth_GBps: 200}\n";

std::string llama2_config() { return test::source_dir() + "/examples/deepspeed/llama-2-7b-config.json"; }

api::JobInput ds_input(const std::string& json, std::vector<std::string> overrides = {},
                       const std::string& cluster = kA800) {
  api::JobInput in;
  in.deepspeed_config = test::write_temp("ds.json", json);
  in.hf_config_path = llama2_config();
  in.cluster_text = cluster;
  in.overrides = std::move(overrides);
  return in;
}

spec::JobSpec ds_job(const std::string& json, std::vector<std::string> overrides = {}) {
  return api::load_job(ds_input(json, std::move(overrides)));
}

std::string ds_error(const std::string& json) {
  return test::error_of([&] { ds_job(json); });
}

const char* kZero3 = R"("zero_optimization": {"stage": 3})";

TEST(DeepSpeedConfig, IsTheJobItsPublishedRunWasCostedAs) {
  // FLAGPERF-Llama2-7B-ZeRO3-A800-s4096-mb1 of published_runs_2.csv (HF Llama-2-7B, DeepSpeed ZeRO-3 on one DGX A800,
  // micro-batch 1, bf16, reduce bucket 1e7) as its ds_config says it (examples/deepspeed), against the job
  // `stepsim validate --jobs-dir` writes for that row: the same step time to the nanosecond.
  api::JobInput in;
  in.deepspeed_config = test::source_dir() + "/examples/deepspeed/llama2-7b-zero3.json";
  in.hf_config_path = llama2_config();
  in.cluster_path = test::source_dir() + "/examples/deepspeed/dgx-a800.yaml";
  const spec::JobSpec from_config = api::load_job(in);
  const spec::JobSpec from_row = test::job_from_yaml(
      "model: {name: Llama2-7B, num_layers: 32, hidden_size: 4096, num_attention_heads: 32, ffn_hidden_size: 11008,"
      " activation: swiglu, hidden_dropout: 0, normalization: rmsnorm, add_bias_linear: false, tie_embeddings: false,"
      " position_embedding: rope, vocab_size: 32000, seq_length: 4096}\n"
      "parallelism: {tensor: 1, pipeline: 1, context: 1, sequence_parallel: false}\n"
      "training: {micro_batch_size: 1, global_batch_size: 8, precision: bf16, recompute: none, zero_stage: 3,"
      " framework: deepspeed, reduce_bucket_size: 10000000}\n"
      "cluster: {gpu: A800, num_gpus: 8, gpus_per_node: 8, intra_node: {bandwidth_GBps: 200},"
      " inter_node: {bandwidth_Gbps: 200}}\n");
  const auto step = [](const spec::JobSpec& j) { return sim::run_simulation(catalog::shipped(), j, {0}).result.step_ns; };
  EXPECT_EQ(step(from_config), step(from_row));
  EXPECT_EQ(from_config.training.framework, spec::Framework::DeepSpeed);
  EXPECT_EQ(from_config.training.reduce_bucket_size, 10000000);
  EXPECT_EQ(from_config.parallelism.data, 8);
}

TEST(DeepSpeedConfig, TheBatchFollowsDeepSpeedsRule) {
  // 8 GPUs: micro 2 x accumulation 4 x 8 = 64.
  const std::string zero = std::string(", ") + kZero3 + ", \"bf16\": {\"enabled\": true}}";
  spec::JobSpec j = ds_job(R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4)" + zero);
  EXPECT_EQ(j.training.micro_batch_size, 2);
  EXPECT_EQ(j.training.global_batch_size, 64);
  j = ds_job(R"({"train_batch_size": 64, "gradient_accumulation_steps": 4)" + zero);
  EXPECT_EQ(j.training.micro_batch_size, 2);
  j = ds_job(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2)" + zero);
  EXPECT_EQ(j.training.global_batch_size, 64);
  EXPECT_EQ(j.num_microbatches(), 4);
  EXPECT_NE(ds_error(R"({"train_batch_size": 60, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4)" +
                     zero)
                .find("train_batch_size 60 is not train_micro_batch_size_per_gpu x gradient_accumulation_steps x "
                      "GPUs = 64"),
            std::string::npos);
  EXPECT_NE(ds_error(R"({"train_micro_batch_size_per_gpu": "auto")" + zero)
                .find("train_micro_batch_size_per_gpu: \"auto\" is filled in by the Hugging Face Trainer"),
            std::string::npos);
  // Neither bf16 nor fp16 enabled: fp32, DeepSpeed's default.
  EXPECT_EQ(ds_job(std::string(R"({"train_micro_batch_size_per_gpu": 1, )") + kZero3 + "}").training.precision,
            spec::Precision::Fp32);
  // --set edits the tree before the degrees are resolved.
  EXPECT_EQ(api::load_job(ds_input(R"({"train_micro_batch_size_per_gpu": 1)" + zero,
                                   {"model.seq_length=2048", "training.global_batch_size=32"}))
                .training.global_batch_size,
            32);
}

TEST(DeepSpeedConfig, RefusesWhatItDoesNotModelByName) {
  const std::string head = R"({"train_micro_batch_size_per_gpu": 1, )";
  const struct {
    std::string json, message;
  } cases[] = {
      {head + R"("zero_optimization": {"stage": 2}})", "zero_optimization.stage: 2: framework deepspeed is modelled at "
                                                      "ZeRO stage 3"},
      {head + R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})",
       "zero_optimization.offload_optimizer: offloading under ZeRO-3"},
      {head + R"("zero_optimization": {"stage": 3, "zero_quantized_weights": true}})", "ZeRO++'s quantized"},
      {head + R"("zero_optimization": {"stage": 3, "overlap_comm": false}})", "overlap_comm: false is not modelled"},
      {head + R"("zero_optimization": {"stage": 3, "stage3_prefetch": 1}})", "zero_optimization.stage3_prefetch: "
                                                                             "unknown key"},
      {head + kZero3 + R"(, "fp16": {"enabled": true}, "bf16": {"enabled": true}})", "fp16.enabled: cannot be on"},
      {head + kZero3 + R"(, "optimizer": {"type": "Lamb"}})", "optimizer.type: 'Lamb': only Adam and AdamW"},
      {head + kZero3 + R"(, "pipeline": {"stages": 2}})", "pipeline: DeepSpeed's pipeline engine is not modelled"},
      {head + kZero3 + R"(, "communication_data_type": "fp32"})", "communication_data_type: the gradient reduction"},
      {head + kZero3 + R"(, "train_batch": 8})", "train_batch: unknown key"},
      {head + kZero3 + R"(, "steps_per_print": 1, "steps_per_print": 2})", "appears twice in one object"},
      // Beyond int64 (the campaign's find: the conversion ran before the range check, UB) and not integral.
      {head + R"("zero_optimization": {"stage": 3.3e118}})", "zero_optimization.stage: must be an integer in"},
      {head + R"("zero_optimization": {"stage": 18446744073709551615}})", "zero_optimization.stage: must be an integer"},
      {head + R"("zero_optimization": {"stage": 2.5}})", "zero_optimization.stage: must be an integer in"},
  };
  for (const auto& c : cases) {
    EXPECT_NE(ds_error(c.json).find(c.message), std::string::npos) << c.json << "\n" << ds_error(c.json);
  }
  // Off is no refusal; what changes nothing is named in the notes.
  const spec::JobSpec j = ds_job(head + kZero3 + R"(, "amp": {"enabled": false}, "activation_checkpointing": )" +
                                 R"({"partition_activations": true}, "wandb": {"enabled": false}})");
  std::string notes;
  for (const std::string& n : j.training.input_notes) notes += n + "\n";
  EXPECT_NE(notes.find("activation_checkpointing: DeepSpeed's checkpointing API acts only where the model calls it"),
            std::string::npos) << notes;
  EXPECT_NE(notes.find("amp (off), wandb: no effect"), std::string::npos) << notes;
}

TEST(DeepSpeedConfig, CliNeedsTheModelAndACluster) {
  const std::string ds = test::source_dir() + "/examples/deepspeed/llama2-7b-zero3.json";
  const std::string cluster = test::source_dir() + "/examples/deepspeed/dgx-a800.yaml";
  auto r = test::run_cli("simulate --deepspeed-config " + ds + " --cluster " + cluster);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--deepspeed-config needs --hf-config CONFIG.json"), std::string::npos) << r.output;
  r = test::run_cli("simulate --deepspeed-config " + ds + " --hf-config " + llama2_config());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--deepspeed-config needs --cluster CLUSTER.yaml"), std::string::npos) << r.output;
  // Beside a job file --hf-config gives its model (the file's model keys written over it; tests/test_input_kinds.cpp).
  r = test::run_cli("simulate " + test::source_dir() + "/examples/llama2-7b-8.yaml --hf-config " + llama2_config());
  EXPECT_EQ(r.code, 0) << r.output;
  r = test::run_cli("simulate --deepspeed-config " + ds + " --hf-config " + llama2_config() + " --cluster " + cluster);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("on 8 x A800"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("read: optimizer: AdamW"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace stepsim
