// `simulate --dump-job` and the job's setup in the summary (issue 46 item 6): the dumped job simulates the same step
// as the input it came from, whatever the input's form; the header's parameter counts are the models' published ones.
#include <string>

#include <gtest/gtest.h>

#include "stepsim/api/dump_job.hpp"
#include "stepsim/api/simulate.hpp"
#include "stepsim/report/job_setup.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

std::string src(const std::string& rel) { return test::source_dir() + "/" + rel; }

// Simulates `in`, dumps it, simulates the dump: the same step and the same peak memory, bit for bit.
void expect_round_trip(const api::JobInput& in, const std::string& name) {
  api::SimulateOptions o;
  o.job = in;
  o.dump_job_path = test::temp_dir() + name + ".yaml";
  const api::SimulateOutput first = api::simulate(o);
  api::write_outputs(o, first);
  const std::string text = test::read_file(o.dump_job_path);
  EXPECT_EQ(text.rfind("# stepsim simulate --dump-job: the job as read from ", 0), 0u) << text;
  EXPECT_EQ(text.find("\n_"), std::string::npos) << text;
  EXPECT_EQ(text.find(" _"), std::string::npos) << "bookkeeping key left in\n" << text;
  api::SimulateOptions again;
  again.job.job_path = o.dump_job_path;
  const api::SimulateOutput second = api::simulate(again);
  EXPECT_EQ(first.summary.step_time_s, second.summary.step_time_s) << name;
  EXPECT_EQ(first.summary.peak_bytes_max, second.summary.peak_bytes_max) << name;
  EXPECT_EQ(first.json["job"], second.json["job"]) << name;
}

TEST(DumpJob, EveryInputFormRoundTripsToTheSameStep) {
  api::JobInput file;
  file.job_path = src("examples/llama2-7b-8.yaml");
  file.overrides = {"training.micro_batch_size=2", "parallelism.tensor=2", "parallelism.data=4"};
  expect_round_trip(file, "file-with-sets");

  api::JobInput megatron;
  megatron.megatron_args = "--num-layers 4 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
                           "--micro-batch-size 1 --global-batch-size 16 --tensor-model-parallel-size 2 "
                           "--sequence-parallel --bf16 --use-distributed-optimizer --swiglu --normalization RMSNorm "
                           "--ffn-hidden-size 5632 --vocab-size 32000 --position-embedding-type rope "
                           "--disable-bias-linear";
  megatron.cluster_path = src("examples/clusters/h800-96.yaml");
  megatron.overrides = {"cluster.num_gpus=16"};
  expect_round_trip(megatron, "megatron-args");

  api::JobInput titan;
  titan.torchtitan_config = src("examples/torchtitan/llama3-8b-float8.toml");
  titan.cluster_path = src("examples/clusters/h100-1024.yaml");
  titan.overrides = {"cluster.num_gpus=16"};
  expect_round_trip(titan, "torchtitan");

  api::JobInput ds;
  ds.deepspeed_config = src("examples/deepspeed/llama2-7b-zero3.json");
  ds.hf_config_path = src("examples/deepspeed/llama-2-7b-config.json");
  ds.cluster_path = src("examples/deepspeed/dgx-a800.yaml");
  expect_round_trip(ds, "deepspeed");
}

// What a converter read or assumed is said in the dump's header, not lost.
TEST(DumpJob, TheHeaderSaysWhatTheConverterAssumed) {
  api::JobInput titan;
  titan.torchtitan_config = src("examples/torchtitan/llama3-8b-float8.toml");
  titan.cluster_path = src("examples/clusters/h100-1024.yaml");
  const std::string text = api::resolved_job_yaml(titan);
  EXPECT_NE(text.find("\n# read: "), std::string::npos) << text;
  EXPECT_NE(text.find("framework: torchtitan"), std::string::npos) << text;
}

// Llama 2 7B has 6.74 B parameters (Touvron et al. 2023, Table 1 rounds it to 7B; the HF checkpoint holds 6,738,415,616)
// and Mixtral 8x7B 46.7 B of which 12.9 B are active per token (Mistral AI's announcement).
TEST(JobSetup, ParametersAreTheModelsPublishedCounts) {
  const spec::JobSpec llama = api::load_job(api::JobInput{src("examples/llama2-7b-8.yaml")});
  const std::string l = report::job_setup_text(llama, 1);
  EXPECT_NE(l.find("parameters 6.74 B (active 6.74 B)"), std::string::npos) << l;
  EXPECT_NE(l.find("distributed optimizer (ZeRO-1)"), std::string::npos) << l;
  EXPECT_NE(l.find("links: intra-node 450 GB/s"), std::string::npos) << l;
  EXPECT_EQ(report::job_setup_json(llama, 1)["parameters"], 6738415616);
  const spec::JobSpec mixtral = api::load_job(api::JobInput{src("examples/mixtral-8x7b-ep8.yaml")});
  const std::string m = report::job_setup_text(mixtral, 1);
  EXPECT_NE(m.find("parameters 46.70 B (active 12.88 B)"), std::string::npos) << m;
}

}  // namespace
}  // namespace stepsim
