// --torchtitan-config: a torchtitan job config (TOML) with a cluster becomes the job torchtitan would run. Dimensions
// are torchtitan's Llama 3 flavor table at 9dec370 worked by hand (FFN = multiple_of x ceil(multiplier x (2/3 x 4
// dim) / multiple_of)); the parallel layout and batch follow its config_manager.py and train.py.
#include <gtest/gtest.h>

#include <string>

#include "stepsim/api/job_input.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

constexpr const char* kCluster = "gpu: H100-SXM\nnum_gpus: 64\ngpus_per_node: 8\n";

api::JobInput input(const std::string& toml, const std::string& cluster = kCluster,
                    std::vector<std::string> overrides = {}) {
  api::JobInput in;
  in.torchtitan_config = test::write_temp("tt.toml", toml);
  in.cluster_text = cluster;
  in.overrides = std::move(overrides);
  return in;
}

spec::JobSpec job(const std::string& toml, const std::string& cluster = kCluster,
                  std::vector<std::string> overrides = {}) {
  return api::load_job(input(toml, cluster, std::move(overrides)));
}

std::string error(const std::string& toml, const std::string& cluster = kCluster) {
  return test::error_of([&] { job(toml, cluster); });
}

TEST(TorchtitanConfig, FlavorsAreTorchtitansLlama3Table) {
  // 8B: 2/3 x 16384 = 10922, x 1.3 = 14198, up to a multiple of 1024: 14336. 70B: 21845 x 1.3 = 28398 -> 28672 (4096).
  // 405B: 43690 x 1.2 = 52428 -> 53248 (4096). debugmodel: 682 -> 768 (256), 16 heads without grouping.
  const struct {
    const char* flavor;
    int layers;
    int64_t hidden, ffn;
    int heads, groups;
  } cases[] = {{"8B", 32, 4096, 14336, 32, 8},
               {"70B", 80, 8192, 28672, 64, 8},
               {"405B", 126, 16384, 53248, 128, 8},
               {"debugmodel", 8, 256, 768, 16, 16}};
  for (const auto& c : cases) {
    const spec::JobSpec j =
        job(std::string("[model]\nname = \"llama3\"\nflavor = \"") + c.flavor + "\"\n[training]\nseq_len = 4096\n");
    SCOPED_TRACE(c.flavor);
    EXPECT_EQ(j.model.num_layers, c.layers);
    EXPECT_EQ(j.model.hidden_size, c.hidden);
    EXPECT_EQ(j.model.ffn_hidden_size, c.ffn);
    EXPECT_EQ(j.model.num_attention_heads, c.heads);
    EXPECT_EQ(j.model.num_query_groups, c.groups);
    EXPECT_EQ(j.model.vocab_size, 128256);
    EXPECT_EQ(j.model.seq_length, 4096);
    EXPECT_EQ(j.training.framework, spec::Framework::Torchtitan);
  }
}

TEST(TorchtitanConfig, DefaultsAndTheRestOfTheGpusAreFsdp) {
  // torchtitan's defaults: batch 8, seq 2048, dp_shard -1 (the rest), selective op-level AC, eager, bf16 with fp32
  // gradient reduction. 64 GPUs at TP 2: 32 data-parallel ranks sharding the model (FSDP2: ZeRO-3), global batch
  // 8 x 32 = 256 sequences.
  const spec::JobSpec j = job("[model]\nflavor = \"8B\"\n[training]\ntensor_parallel_degree = 2\n");
  EXPECT_EQ(j.parallelism.tensor, 2);
  EXPECT_TRUE(j.parallelism.sequence_parallel);
  EXPECT_EQ(j.parallelism.data, 32);
  EXPECT_EQ(j.training.zero_stage, 3);
  EXPECT_EQ(j.training.micro_batch_size, 8);
  EXPECT_EQ(j.training.global_batch_size, 256);
  EXPECT_EQ(j.model.seq_length, 2048);
  EXPECT_EQ(j.training.recompute, spec::Recompute::Selective);
  EXPECT_FALSE(j.training.compile);
  EXPECT_EQ(j.training.precision, spec::Precision::Bf16);
  EXPECT_TRUE(j.training.grad_reduce_in_fp32);
  // --set still edits the converted job: the data-parallel degree it gives is kept, the global batch follows it.
  const spec::JobSpec o = job("[model]\nflavor = \"8B\"\n", kCluster, {"parallelism.data=16", "cluster.num_gpus=16"});
  EXPECT_EQ(o.parallelism.data, 16);
  EXPECT_EQ(o.training.global_batch_size, 8 * 16);
}

TEST(TorchtitanConfig, PipelineSplitsTheLocalBatchAndShardsAsZero1) {
  // PP 4 interleaved over 64 GPUs with TP 2: DP 8. The local batch 8 splits into the default one micro-batch per
  // stage (4 of 2); the interleaved schedule runs two stages per rank (torchtitan's generate_split_points); FSDP2
  // under PP gathers once per step and reduces on the last micro-batch: ZeRO-1's communication.
  const spec::JobSpec j = job(
      "[model]\nflavor = \"70B\"\n[training]\nbatch_size = 8\ntensor_parallel_degree = 2\n"
      "[experimental]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"Interleaved1F1B\"\n");
  EXPECT_EQ(j.parallelism.pipeline, 4);
  EXPECT_EQ(j.parallelism.virtual_stages, 2);
  EXPECT_EQ(j.parallelism.schedule, spec::PipelineSchedule::Interleaved1F1B);
  EXPECT_EQ(j.parallelism.data, 8);
  EXPECT_EQ(j.training.micro_batch_size, 2);
  EXPECT_EQ(j.training.global_batch_size, 8 * 8);
  EXPECT_EQ(j.training.zero_stage, 1);  // the distributed optimizer, as the loader records it
  EXPECT_TRUE(j.training.distributed_optimizer);
  // 16 micro-batches asked for: micro-batch 8 / 16 does not divide.
  EXPECT_NE(error("[model]\nflavor = \"70B\"\n[training]\nbatch_size = 8\n[experimental]\n"
                  "pipeline_parallel_degree = 4\npipeline_parallel_microbatches = 16\n")
                .find("training.batch_size: 8 does not split into 16 pipeline micro-batches"),
            std::string::npos);
}

TEST(TorchtitanConfig, Float8CompileContextParallelAndTheirNotes) {
  const spec::JobSpec j = job(
      "[model]\nflavor = \"8B\"\n[training]\nbatch_size = 1\nseq_len = 65536\ncompile = true\n"
      "data_parallel_shard_degree = 32\n[experimental]\ncontext_parallel_degree = 2\n"
      "enable_async_tensor_parallel = true\n[float8]\nenable_float8_linear = true\n"
      "enable_fsdp_float8_all_gather = true\nprecompute_float8_dynamic_scale_for_fsdp = true\n"
      "[activation_checkpoint]\nmode = \"full\"\n[optimizer]\nname = \"AdamW\"\nlr = 8e-4\nfused = true\n");
  EXPECT_EQ(j.parallelism.context, 2);
  EXPECT_EQ(j.parallelism.data, 32);
  EXPECT_EQ(j.training.precision, spec::Precision::Fp8);
  EXPECT_TRUE(j.training.fp8_param_gather);
  EXPECT_TRUE(j.training.compile);
  EXPECT_EQ(j.training.recompute, spec::Recompute::Full);
  // What the converter could not turn into a plain job key is named, and the summary prints it.
  std::string notes;
  for (const std::string& n : j.training.input_notes) notes += n + "\n";
  EXPECT_NE(notes.find("async TP is not modelled"), std::string::npos) << notes;
  EXPECT_NE(notes.find("precompute_float8_dynamic_scale_for_fsdp"), std::string::npos) << notes;
  EXPECT_NE(notes.find("optimizer.fused = true"), std::string::npos) << notes;
  EXPECT_NE(notes.find("vocabulary 128256"), std::string::npos) << notes;
}

TEST(TorchtitanConfig, IsTheJobItsPublishedRunWasCostedAs) {
  // TT24-T1-8B-8-fsdp-compile of published_runs_2.csv (torchtitan's Dec 2024 benchmark: Llama 3 8B, 8 H100s at
  // 500 W, local batch 2 x 8192, compiled, op-level selective AC, FSDP2 over 8) as its config would say it, on the
  // cluster `stepsim validate --jobs-dir` writes for that row: the same step time to the nanosecond.
  const std::string cluster = "gpu: H100-SXM-96GB\npower_limit_W: 500\nnum_gpus: 8\ngpus_per_node: 8\n"
                              "intra_node: {bandwidth_GBps: 450}\ninter_node: {bandwidth_Gbps: 400}\n";
  const spec::JobSpec from_toml = job(
      "[job]\ndump_folder = \"./outputs\"\n[metrics]\nlog_freq = 10\n[checkpoint]\nenable_checkpoint = false\n"
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\nnorm_type = \"rmsnorm\"\ntokenizer_path = \"t.model\"\n"
      "[training]\nbatch_size = 2\nseq_len = 8192\nsteps = 1000\nwarmup_steps = 200\nmax_norm = 1.0\n"
      "data_parallel_replicate_degree = 1\ndata_parallel_shard_degree = -1\ntensor_parallel_degree = 1\n"
      "compile = true\ndataset = \"c4\"\n[activation_checkpoint]\nmode = 'selective'\nselective_ac_option = 'op'\n",
      cluster);
  const spec::JobSpec from_row = test::job_from_yaml(
      "model: {name: Llama3.1-8B, num_layers: 32, hidden_size: 4096, num_attention_heads: 32, num_query_groups: 8,"
      " attention: {type: gqa}, ffn_hidden_size: 14336, activation: swiglu, hidden_dropout: 0, normalization: rmsnorm,"
      " add_bias_linear: false, tie_embeddings: false, position_embedding: rope, vocab_size: 128256,"
      " seq_length: 8192}\n"
      "parallelism: {tensor: 1, pipeline: 1, context: 1}\n"
      "training: {micro_batch_size: 2, global_batch_size: 16, precision: bf16, recompute: selective, zero_stage: 3,"
      " framework: torchtitan, compile: true}\n"
      "cluster: {" + std::string("gpu: H100-SXM-96GB, power_limit_W: 500, num_gpus: 8, gpus_per_node: 8,"
                                 " intra_node: {bandwidth_GBps: 450}, inter_node: {bandwidth_Gbps: 400}}\n"));
  const auto step = [](const spec::JobSpec& j) {
    return sim::run_simulation(catalog::shipped(), j, {0}).result.step_ns;
  };
  EXPECT_EQ(step(from_toml), step(from_row));
}

TEST(TorchtitanConfig, RefusesWhatItDoesNotModelByName) {
  const struct {
    const char* toml;
    const char* message;
  } cases[] = {
      {"[model]\nname = \"deepseek_v3\"\n", "model.name: 'deepseek_v3' is not modelled: llama3"},
      {"[model]\nflavor = \"3B\"\n", "model.flavor: '3B' is not a llama3 flavor (debugmodel, 8B, 70B, 405B)"},
      {"[model]\nnorm_type = \"fused_rmsnorm\"\n", "model.norm_type: 'fused_rmsnorm' is not modelled"},
      {"[training]\nbatch_sise = 4\n", "training.batch_sise: unknown key"},
      {"[trainig]\nbatch_size = 4\n", "[trainig]: unknown section"},
      {"[training]\nbatch_size = \"4\"\n", "training.batch_size: must be an integer"},
      {"[training]\nbatch_size = 0\n", "training.batch_size: must be in [1, 65536]"},
      {"[training]\ndata_parallel_replicate_degree = 2\n", "HSDP (replicate > 1 with sharding) is not modelled yet"},
      {"[training]\nenable_cpu_offload = true\n", "training.enable_cpu_offload: FSDP2's CPU offload is not modelled"},
      {"[training]\nmixed_precision_param = \"float32\"\n",
       "training.mixed_precision_param: 'float32' is not modelled"},
      {"[experimental]\ncontext_parallel_degree = 2\ncontext_parallel_rotate_method = \"alltoall\"\n",
       "experimental.context_parallel_rotate_method: 'alltoall' is not modelled: allgather"},
      {"[experimental]\nenable_async_tensor_parallel = true\n", "needs training.compile"},
      {"[experimental]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = \"ZBVZeroBubble\"\n",
       "experimental.pipeline_parallel_schedule: 'ZBVZeroBubble' is not modelled"},
      {"[experimental]\npipeline_parallel_split_points = [\"layers.4\"]\n", "custom split points are not modelled"},
      {"[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"2\"\n",
       "activation_checkpoint.selective_ac_option: '2' (every n-th layer) is not modelled"},
      {"[activation_checkpoint]\nselective_ac_option = 2\n", "'2' (every n-th layer) is not modelled"},
      {"[float8]\nenable_fsdp_float8_all_gather = true\n", "needs float8.enable_float8_linear"},
      {"[float8]\nenable_float8_linear = true\nscaling_type_weight = \"delayed\"\n", "'delayed' is not modelled"},
      {"[optimizer]\nname = \"SGD\"\n", "optimizer.name: 'SGD' is not modelled"},
      {"[training]\nbatch_size = 1\n[training]\nseq_len = 2\n", "line 3"},  // TOML: a table defined twice
      {"model = 3\n", "model: must be a [model] section"},
  };
  for (const auto& c : cases) {
    const std::string e = error(c.toml);
    EXPECT_NE(e.find(c.message), std::string::npos) << c.toml << "\n -> " << e;
    EXPECT_NE(e.find("tt.toml"), std::string::npos) << e;  // the message names the file
  }
  // A degree edited by --set into something that is not one is refused by its key, not an internal error.
  EXPECT_NE(test::error_of([] { job("[model]\nflavor = \"8B\"\n", kCluster, {"parallelism.tensor=abc"}); })
                .find("parallelism.tensor: must be an integer in [1, 2^20]"),
            std::string::npos);
  // -1 needs GPUs that divide into the other degrees (a replicate degree beyond the GPUs as well).
  EXPECT_NE(error("[training]\ndata_parallel_replicate_degree = 1048576\ndata_parallel_shard_degree = 1\n"
                  "tensor_parallel_degree = 65536\n[experimental]\npipeline_parallel_degree = 4096\n")
                .find("tt.toml"),
            std::string::npos);
  EXPECT_NE(error("[training]\ntensor_parallel_degree = 3\n").find("64 GPUs do not divide into tensor x pipeline x "
                                                                  "context x replicate = 3"),
            std::string::npos);
}

TEST(TorchtitanConfig, CliNeedsAClusterAndOneJob) {
  const std::string toml = test::write_temp("cli.toml", "[model]\nflavor = \"8B\"\n");
  const std::string cluster = test::write_temp("cli-cluster.yaml", kCluster);
  auto r = test::run_cli("simulate --torchtitan-config " + toml);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--torchtitan-config needs --cluster CLUSTER.yaml"), std::string::npos) << r.output;
  r = test::run_cli("simulate --torchtitan-config " + toml + " --megatron-args \"--num-layers 2\" --cluster " +
                    cluster);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("give one job"), std::string::npos) << r.output;
  r = test::run_cli("simulate --torchtitan-config " + toml + " --cluster " + cluster);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("llama3-8B on 64 x H100-SXM"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("read: model: llama3 8B"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace stepsim
