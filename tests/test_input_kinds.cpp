// A file of another tool given where a job is expected, and a mistyped Megatron flag (issue 47 item 3): the error
// names what the file is and the option that reads it, or the flag meant.
#include <string>

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace stepsim {
namespace {

void expect_refusal(const std::string& args, const std::string& says) {
  const test::CliResult r = test::run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(says), std::string::npos) << args << "\n" << r.output;
}

TEST(InputKinds, AnotherToolsFileIsNamedWithItsOption) {
  const std::string ex = test::source_dir() + "/examples/";
  expect_refusal("simulate " + ex + "deepspeed/llama-2-7b-config.json",
                 "llama-2-7b-config.json: a Hugging Face config.json, not a job: give a job file with it as its "
                 "model (JOB.yaml --hf-config ");
  expect_refusal("simulate " + ex + "deepspeed/llama2-7b-zero3.json",
                 "llama2-7b-zero3.json: a DeepSpeed config, not a job: give it as --deepspeed-config ");
  expect_refusal("plan " + ex + "torchtitan/llama3-8b-float8.toml",
                 "llama3-8b-float8.toml: a TOML file, not a job (YAML): a torchtitan config is read with "
                 "--torchtitan-config ");
}

// `--hf-config` on a job file: the model from the Hugging Face config, the file's model keys over it, the same job
// as `model: {hf_config: path, ...}` in the file.
TEST(InputKinds, HfConfigGivesAJobFilesModel) {
  const std::string ex = test::source_dir() + "/examples/";
  const std::string body = "parallelism: {data: 8}\n"
                           "training: {micro_batch_size: 1, global_batch_size: 32, distributed_optimizer: true}\n"
                           "cluster: {gpu: H100-SXM, num_gpus: 8}\n";
  const std::string flag_job = test::write_temp("hf-flag.yaml", "model: {seq_length: 4096}\n" + body);
  const std::string file_job = test::write_temp(
      "hf-file.yaml", "model: {hf_config: " + ex + "deepspeed/llama-2-7b-config.json, seq_length: 4096}\n" + body);
  const test::CliResult a =
      test::run_cli("simulate " + flag_job + " --hf-config " + ex + "deepspeed/llama-2-7b-config.json");
  const test::CliResult b = test::run_cli("simulate " + file_job);
  ASSERT_EQ(a.code, 0) << a.output;
  ASSERT_EQ(b.code, 0) << b.output;
  // From the step time to the engine's own line (its events per second vary from run to run).
  auto results = [](const std::string& out) {
    const size_t from = out.find("step time");
    return out.substr(from, out.find("simulated ") - from);
  };
  EXPECT_EQ(results(a.output), results(b.output));
  // The trace commands take it too: the export of the flag's job is the file's, node for node.
  const std::string out_a = test::temp_dir() + "hf-export-flag", out_b = test::temp_dir() + "hf-export-file";
  const test::CliResult ea = test::run_cli("trace export-chakra " + flag_job + " --hf-config " + ex +
                                           "deepspeed/llama-2-7b-config.json --quiet --out " + out_a);
  const test::CliResult eb = test::run_cli("trace export-chakra " + file_job + " --quiet --out " + out_b);
  ASSERT_EQ(ea.code, 0) << ea.output;
  ASSERT_EQ(eb.code, 0) << eb.output;
  EXPECT_EQ(test::read_file(out_a + "/workload.0.et"), test::read_file(out_b + "/workload.0.et"));
  expect_refusal("simulate " + file_job + " --hf-config " + ex + "deepspeed/llama-2-7b-config.json",
                 "key model.hf_config: the job names its Hugging Face config and --hf-config gives another");
  expect_refusal("simulate --megatron-args \"--num-layers 2\" --cluster " + ex + "clusters/h800-96.yaml --hf-config " +
                     ex + "deepspeed/llama-2-7b-config.json",
                 "--hf-config gives the model of a job file or of a --deepspeed-config");
}

// Keys and values as Hugging Face, torchtitan, DeepSpeed and Megatron-LM spell them get stepsim's spelling, in a file
// and from --set alike (the flag named, not the file); a value from --set that breaks a rule blames the flag too.
TEST(InputKinds, OtherToolsSpellingsGetStepsimsKey) {
  const std::string job = test::source_dir() + "/examples/llama2-7b-8.yaml";
  expect_refusal("simulate " + job + " --set model.num_kv_heads=8",
                 "--set model.num_kv_heads=8: unknown key model.num_kv_heads (did you mean model.num_query_groups?");
  expect_refusal("simulate " + job + " --set model.num_key_value_heads=8", "did you mean model.num_query_groups?");
  expect_refusal("simulate " + job + " --set parallelism.tp=2", "(did you mean parallelism.tensor?)");
  expect_refusal("simulate " + job + " --set training.zero=3", "(did you mean training.zero_stage?");
  expect_refusal("simulate " + job + " --set training.fsdp=true", "(did you mean training.zero_stage: 3?");
  expect_refusal("simulate " + job + " --set cluster.gpus=8", "(did you mean cluster.num_gpus?");
  expect_refusal("simulate " + job + " --set model.precision=bf16", "(did you mean training.precision?");
  expect_refusal("simulate " + job + " --set num_key_value_heads=8",
                 "unknown key num_key_value_heads (did you mean model.num_query_groups? it belongs in the model section)");
  expect_refusal("simulate " + job + " --set training.precision=bfloat16",
                 "--set training.precision=bfloat16: key training.precision: must be one of fp32 | fp16 | bf16 | fp8 "
                 "| nvfp4, got 'bfloat16' (did you mean bf16?)");
  expect_refusal("simulate " + job + " --set training.micro_batch_size=0",
                 "--set training.micro_batch_size=0: key training.micro_batch_size: must be in [1, 65536], got 0");
  const std::string file = test::write_temp(
      "foreign-keys.yaml",
      "model: {name: x, num_layers: 2, hidden_size: 1024, num_attention_heads: 8, n_kv_heads: 2, seq_length: 2048,"
      " vocab_size: 32000}\n"
      "training: {micro_batch_size: 1, global_batch_size: 8}\ncluster: {gpu: H100-SXM, num_gpus: 8}\n");
  expect_refusal("simulate " + file,
                 "foreign-keys.yaml: unknown key model.n_kv_heads (did you mean model.num_query_groups? torchtitan's");
}

TEST(InputKinds, AMistypedMegatronFlagGetsTheNearestOne) {
  const std::string cluster = test::source_dir() + "/examples/clusters/h800-96.yaml";
  expect_refusal("simulate --cluster " + cluster + " --megatron-args \"--num-layer 4\"",
                 "unknown argument --num-layer (did you mean --num-layers?)");
  expect_refusal("simulate --cluster " + cluster + " --megatron-args \"--num-layers 4 --sequence-paralel\"",
                 "unknown argument --sequence-paralel (did you mean --sequence-parallel?)");
  // Other tools' names are not typos of Megatron's: the flag they mean, not the nearest spelling.
  expect_refusal("simulate --cluster " + cluster + " --megatron-args \"--tensor-parallel-size 2\"",
                 "unknown argument --tensor-parallel-size (did you mean --tensor-model-parallel-size?)");
  expect_refusal("simulate --cluster " + cluster + " --megatron-args \"--tp 2\"",
                 "unknown argument --tp (did you mean --tensor-model-parallel-size?)");
  expect_refusal("simulate --cluster " + cluster + " --megatron-args \"--num-key-value-heads 8\"",
                 "unknown argument --num-key-value-heads (did you mean --num-query-groups?)");
  // Nothing near: no guess.
  expect_refusal("simulate --cluster " + cluster + " --megatron-args \"--frobnicate-everything 1\"",
                 "unknown argument --frobnicate-everything\n");
}

}  // namespace
}  // namespace stepsim
