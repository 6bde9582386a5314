// stepsim validate (issue 13 item 3): the published-runs reader on the real shared CSV, the FLOP conventions against
// the README's closed forms, the rules for unstated settings, and the command end to end on small rows (JSON keys,
// exit codes, bad input naming line and column).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/validate/published_run.hpp"
#include "stepsim/validate/run_job.hpp"
#include "stepsim/validate/validation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/catalog/efficiency_table.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::validate {
namespace {

std::string shared_csv() { return std::string(STEPSIM_SHARED_DIR) + "/data/published-runs/published_runs.csv"; }

const PublishedRun& row(const std::vector<PublishedRun>& runs, const std::string& id) {
  for (const auto& r : runs) {
    if (r.id == id) return r;
  }
  throw std::runtime_error("no row " + id);
}

TEST(Validate, ReadsEverySharedRow) {
  const auto runs = read_published_runs(shared_csv());
  EXPECT_EQ(runs.size(), 37u);
  const PublishedRun& r = row(runs, "LLAMA3-T4-3");
  EXPECT_EQ(r.layers, 126);
  EXPECT_EQ(r.kv_heads, 8);
  EXPECT_EQ(r.cp, 16);
  EXPECT_EQ(r.seq_len, 131072);
  EXPECT_FALSE(r.micro_batch.has_value());
  EXPECT_DOUBLE_EQ(*r.tflops_per_gpu, 380);
  const PublishedRun& d = row(runs, "DGXC-DSV3-bf16-1024");
  EXPECT_EQ(d.moe_experts, 256);
  EXPECT_EQ(d.moe_topk, 8);
  EXPECT_EQ(d.ep, 64);
  EXPECT_DOUBLE_EQ(*d.step_time_s, 52.04);
}

TEST(Validate, FlopConventionsFollowTheReadmeClosedForms) {
  const auto runs = read_published_runs(shared_csv());
  // Narayanan 2021 counts the recompute forward: 96·B·s·l·h²·(1 + s/6h + V/16lh).
  const PublishedRun& n = row(runs, "NAR21-T1-01");
  EXPECT_EQ(flop_convention(n), FlopConvention::Hardware);
  const double B = 512, s = 2048, l = 24, h = 2304, V = 51200;
  const double hw = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(step_flops(n, FlopConvention::Hardware) / hw, 1.0, 1e-12);
  EXPECT_NEAR(measured_step_time_s(stepsim::catalog::shipped().gpus, n), hw / (137e12 * 32), 1e-9);  // 3.528 s
  // Megatron 2024 counts model FLOPs: 72·B·s·l·h²·(1 + s/6h + V/12lh).
  const PublishedRun& m = row(runs, "MLM24-H100-1.7B");
  EXPECT_EQ(flop_convention(m), FlopConvention::Model);
  const double B2 = 192, s2 = 4096, l2 = 24, h2 = 2048, V2 = 131072;
  const double model = 72 * B2 * s2 * l2 * h2 * h2 * (1 + s2 / (6 * h2) + V2 / (12 * l2 * h2));
  EXPECT_NEAR(step_flops(m, FlopConvention::Model) / model, 1.0, 1e-12);
  std::string how;
  EXPECT_NEAR(measured_step_time_s(stepsim::catalog::shipped().gpus, m, &how), model / (408.8e12 * 48), 1e-9);  // 0.452 s
  EXPECT_NE(how.find("model FLOPs"), std::string::npos);
  // A measured step time is used as it is.
  EXPECT_DOUBLE_EQ(measured_step_time_s(stepsim::catalog::shipped().gpus, row(runs, "MTNLG-2240")), 60.1);
}

TEST(Validate, UnstatedSettingsFollowTheDocumentedRules) {
  const auto runs = read_published_runs(shared_csv());
  // Megatron-LM 2021: no sequence parallelism, fp16 for "16bit", no distributed optimizer.
  RunJob j = job_for_run(stepsim::catalog::shipped().gpus, row(runs, "NAR21-T1-05"));
  EXPECT_FALSE(j.root["parallelism"]["sequence_parallel"].as<bool>());
  EXPECT_EQ(j.root["training"]["precision"].as<std::string>(), "fp16");
  EXPECT_EQ(j.root["training"]["micro_batch_size"].as<int>(), 1);
  EXPECT_FALSE(j.root["training"]["distributed_optimizer"].as<bool>());
  // Llama 3.1: GQA, SwiGLU, RMSNorm; the paper's interleaved schedule has one layer per model chunk, the first
  // holding only the embedding and the last only the loss: 8 chunks per stage, (0, 1 x 126, 0); its FSDP keeps the
  // parameters whole and shards gradients and optimizer states (ZeRO-2).
  j = job_for_run(stepsim::catalog::shipped().gpus, row(runs, "LLAMA3-T4-1"));
  EXPECT_EQ(j.root["model"]["activation"].as<std::string>(), "swiglu");
  EXPECT_EQ(j.root["model"]["num_query_groups"].as<int>(), 8);
  EXPECT_TRUE(j.root["parallelism"]["sequence_parallel"].as<bool>());
  j.root["training"]["recompute"] = "full";
  const spec::JobSpec job = spec::job_from_node(stepsim::catalog::shipped().gpus, j.root, "row");
  EXPECT_EQ(job.parallelism.virtual_stages, 8);
  EXPECT_EQ(job.parallelism.pipeline_layers.front(), 0);
  EXPECT_EQ(job.parallelism.pipeline_layers.back(), 0);
  EXPECT_EQ(job.parallelism.pipeline_layers[1], 1);
  EXPECT_EQ(job.training.zero_stage, 2);
  EXPECT_EQ(job.cluster.gpu, "H100-SXM");
  // Megatron 2024's notes name --tp-comm-overlap.
  EXPECT_TRUE(job_for_run(stepsim::catalog::shipped().gpus, row(runs, "MLM24-H100-7.1B")).root["training"]["tp_comm_overlap"].as<bool>());
  // Every row names what it assumed.
  EXPECT_FALSE(j.assumptions.empty());
}

TEST(Validate, Narayanan2021TableOneInterleavesAsSectionFiveOneStates) {
  // Section 5.1: the interleaved schedule with scatter/gather. Chunks: the fewest > 1 that divide a stage's layers
  // (Megatron-LM 2021 splits a stage's layers evenly), p2p synchronous (no overlap before Megatron-LM 3.0).
  const auto runs = read_published_runs(shared_csv());
  const std::vector<std::pair<const char*, int>> expected = {
      {"NAR21-T1-05", 2},   // 48 layers / 2 stages = 24 a stage
      {"NAR21-T1-06", 3},   // 60 / 4 = 15
      {"NAR21-T1-07", 2},   // 80 / 8 = 10
      {"NAR21-T1-08", 2},   // 96 / 16 = 6
      {"NAR21-T1-09", 3},   // 105 / 35 = 3
      {"NAR21-T1-10", 2}};  // 128 / 64 = 2
  for (const auto& [id, v] : expected) {
    const RunJob j = job_for_run(stepsim::catalog::shipped().gpus, row(runs, id));
    ASSERT_TRUE(j.root["parallelism"]["virtual_stages"]) << id;
    EXPECT_EQ(j.root["parallelism"]["virtual_stages"].as<int>(), v) << id;
    EXPECT_EQ(j.root["parallelism"]["schedule"].as<std::string>(), "interleaved-1f1b") << id;
    EXPECT_FALSE(j.root["parallelism"]["overlap_p2p_comm"].as<bool>()) << id;
  }
  // No pipeline, nothing to interleave; Table 2's pipelined rows (MT-NLG-like PTD-P) are another table.
  EXPECT_FALSE(job_for_run(stepsim::catalog::shipped().gpus, row(runs, "NAR21-T1-04")).root["parallelism"]["virtual_stages"]);
  // The job loads: the chunks divide the layers and the micro-batches are a multiple of the pipeline.
  RunJob j = job_for_run(stepsim::catalog::shipped().gpus, row(runs, "NAR21-T1-09"));
  j.root["training"]["recompute"] = "full";
  EXPECT_EQ(spec::job_from_node(stepsim::catalog::shipped().gpus, j.root, "row").parallelism.virtual_stages, 3);
}

TEST(Validate, Llama3EightKRowsRunWithoutRecomputeAsThePaperStates) {
  // The Llama 3 paper (section 3.3.2): 8K-token pre-training without activation checkpointing. The 8K rows get
  // recompute none whatever stepsim's memory model says, and so does the 128K row: context parallel 16 leaves each
  // rank 8K tokens' activations, as in the 8K rows.
  const auto runs = read_published_runs(shared_csv());
  for (const char* id : {"LLAMA3-T4-1", "LLAMA3-T4-2", "LLAMA3-T4-3"}) {
    const RunJob j = job_for_run(stepsim::catalog::shipped().gpus, row(runs, id));
    ASSERT_TRUE(j.root["training"]["recompute"]) << id;
    EXPECT_EQ(j.root["training"]["recompute"].as<std::string>(), "none") << id;
    const bool said = std::any_of(j.assumptions.begin(), j.assumptions.end(), [](const std::string& a) {
      return a.find("section 3.3.2") != std::string::npos;
    });
    EXPECT_TRUE(said) << id;
  }
  // Another source's unstated recompute is still left to the least-that-fits rule.
  EXPECT_FALSE(job_for_run(stepsim::catalog::shipped().gpus, row(runs, "MLM24-H100-7.1B")).root["training"]["recompute"]);
}

const char* kHeader =
    "id,source,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,moe_experts,moe_topk,moe_ffn_hidden,params_b,"
    "gpu,num_gpus,gpus_per_node,intra_node_bw_GBps,inter_node_bw_Gbps_per_gpu,tp,pp,dp,cp,ep,vp,micro_batch,"
    "global_batch,precision,recompute,dist_optimizer,step_time_s,tflops_per_gpu,mfu,tokens_per_s_per_gpu,notes\n";

// Families of the NVIDIA benchmark rows (bench/validation/nvidia-h100-benchmarks.csv): Nemotron is a squared-ReLU
// (two-GEMM) model without dropout, Qwen3 has head dim 128 whatever hidden / heads is, and NVIDIA's benchmark
// recipes reduce gradients in bf16.
TEST(Validate, NvidiaBenchmarkFamiliesAndGradientPrecision) {
  const auto runs = read_published_runs(test::source_dir() + "/bench/validation/nvidia-h100-benchmarks.csv");
  RunJob j = job_for_run(stepsim::catalog::shipped().gpus, row(runs, "N2407-NEMOTRON-8B"));
  EXPECT_EQ(j.root["model"]["activation"].as<std::string>(), "gelu");
  EXPECT_EQ(j.root["model"]["normalization"].as<std::string>(), "layernorm");
  EXPECT_EQ(j.root["model"]["hidden_dropout"].as<double>(), 0.0);
  EXPECT_FALSE(j.root["model"]["add_bias_linear"].as<bool>());
  EXPECT_FALSE(j.root["training"]["grad_reduce_in_fp32"].as<bool>());
  j = job_for_run(stepsim::catalog::shipped().gpus, row(runs, "N2407-GPT3-175B-512"));
  EXPECT_EQ(j.root["model"]["hidden_dropout"].as<double>(), 0.1);
  EXPECT_FALSE(j.root["training"]["grad_reduce_in_fp32"].as<bool>());
  // Qwen3-30B-A3B per token, model FLOPs (3 x forward), by hand: attention projections h (H d + 2 kv d) + H d h =
  // 2048 x 5120 + 4096 x 2048 = 18,874,368; routed MLP 3 h f_e k + router h E = 37,748,736 + 262,144 = 38,010,880;
  // x 2 = 113,770,496 per layer, + attention 4 s H d = 67,108,864; x 48 layers x 3 = 26,046,627,840; logits
  // 3 x 2 h V = 1,866,989,568. Total 27,913,617,408 (with d = 64 it would be 20.4 G).
  const PublishedRun& q = row(runs, "MB2604-QWEN3-30B-A3B");
  EXPECT_EQ(job_for_run(stepsim::catalog::shipped().gpus, q).root["model"]["kv_channels"].as<int>(), 128);
  EXPECT_NEAR(step_flops(q, FlopConvention::Model) / double(q.global_batch * q.seq_len), 27913617408.0, 1.0);
  // And the GPT-3 family without a head-dim rule: no kv_channels key.
  EXPECT_FALSE(job_for_run(stepsim::catalog::shipped().gpus, row(runs, "N2407-GPT3-5B")).root["model"]["kv_channels"]);
}

// Llama 4 Maverick as NeMo builds it (Llama4Experts128Config: moe_layer_freq [0, 1] x 24, one shared expert of the
// experts' width) and as NVIDIA's page ran it (the notes: EP64 ETP1, NeMo's token-drop callback at capacity 1.0,
// padded). It was costed with every layer MoE and no shared expert: 778 B parameters for a 400 B model.
TEST(Validate, Llama4MaverickAlternatesDenseAndMoeLayersWithASharedExpert) {
  const auto runs =
      read_published_runs(test::source_dir() + "/../shared/data/published-runs/published_runs_blackwell.csv");
  const PublishedRun& r = row(runs, "DGXC2505-Llama4-Maverick-GB200-bf16-128");
  const RunJob j = job_for_run(stepsim::catalog::shipped().gpus, r);
  const YAML::Node moe = j.root["model"]["moe"];
  EXPECT_EQ(moe["layer_freq"].as<int>(), 2);
  EXPECT_EQ(moe["first_k_dense"].as<int>(), 1);
  EXPECT_EQ(moe["shared_expert_ffn_hidden_size"].as<int>(), 8192);
  EXPECT_EQ(moe["capacity_factor"].as<double>(), 1.0);
  EXPECT_TRUE(moe["pad_to_capacity"].as<bool>());
  EXPECT_EQ(j.root["parallelism"]["expert_tensor"].as<int>(), 1);
  const spec::JobSpec job = spec::job_from_node(stepsim::catalog::shipped().gpus, j.root, r.id);
  int moe_layers = 0;
  for (int l = 0; l < job.model.num_layers; ++l) moe_layers += job.model.is_moe_layer(l) ? 1 : 0;
  EXPECT_EQ(moe_layers, 24);
  EXPECT_FALSE(job.model.is_moe_layer(0));
  EXPECT_TRUE(job.model.is_moe_layer(1));
  // Model FLOPs per token, by hand (h 5120, 40 heads of 128, 8 KV heads, FFN 16384, experts 8192, s 8192, V 202048):
  // attention projections 5120 x (5120 + 2048) + 5120 x 5120 = 62,914,560; dense MLP 3 x 5120 x 16384 =
  // 251,658,240; MoE MLP 3 x 5120 x 8192 x (top-1 + shared) + router 5120 x 128 = 252,313,600; attention
  // 4 x 8192 x 5120 = 167,772,160. 24 dense and 24 MoE layers, each 2 x (projections + MLP) + attention, x 3;
  // logits 3 x 2 x 5120 x 202048. Total 121,057,443,840.
  EXPECT_NEAR(step_flops(r, FlopConvention::Model) / double(r.global_batch * r.seq_len), 121057443840.0, 1.0);
}

// DeepSeek-V3 on GB200 in NeMo 25.04 (Transformer Engine < 2.5: no fused attention kernel for MLA's Q·K head dim 192
// on sm100) runs TE's unfused attention, without dropout (attention_dropout 0); on B200 with Megatron-Bridge 25.11
// (no NeMo container named) and on H100 it is fused.
TEST(Validate, MlaOnBlackwellBeforeTransformerEngine25RunsUnfused) {
  const auto& gpus = stepsim::catalog::shipped().gpus;
  const auto bw =
      read_published_runs(test::source_dir() + "/../shared/data/published-runs/published_runs_blackwell.csv");
  const RunJob gb200 = job_for_run(gpus, row(bw, "DGXC2505-DeepSeekV3-GB200-bf16-128"));
  EXPECT_EQ(gb200.root["training"]["attention_backend"].as<std::string>(), "unfused");
  EXPECT_EQ(gb200.root["model"]["attention_dropout"].as<double>(), 0.0);
  EXPECT_EQ(job_for_run(gpus, row(bw, "MBR2511-DeepSeekV3-B200-mxfp8-256")).root["training"]["attention_backend"]
                .as<std::string>(),
            "flash");
  const auto hopper = read_published_runs(shared_csv());
  EXPECT_EQ(job_for_run(gpus, row(hopper, "DGXC-DSV3-bf16-1024")).root["training"]["attention_backend"]
                .as<std::string>(),
            "flash");
}

// bench/validation/README.md: the check set's shapes agree with the published model TFLOP/s (kept in each row's notes
// as "Published X model TFLOP/s"). NeMo 24.07 counts full attention, as step_flops does: within 0.2 % per row.
TEST(Validate, NvidiaBenchmarkShapesMatchThePublishedFlops) {
  const auto runs = read_published_runs(test::source_dir() + "/bench/validation/nvidia-h100-benchmarks.csv");
  int checked = 0;
  for (const PublishedRun& r : runs) {
    if (r.source != "NeMo_perf_summary_24.07") continue;
    const double published_tflops = std::stod(r.notes.substr(r.notes.find("Published ") + 10));
    const double per_token = step_flops(r, FlopConvention::Model) / double(r.global_batch * r.seq_len);
    EXPECT_NEAR(per_token / (published_tflops * 1e12 / *r.tokens_per_s_per_gpu), 1.0, 0.002) << r.id;
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

TEST(Validate, BadCellsNameLineAndColumn) {
  const std::string good = "a,S,GPT-tiny,4,1024,16,16,4096,32000,1024,,,,0.1,H100-SXM,8,8,450,400,2,2,2,1,1,,1,16,bf16,,,1.0,,,,\n";
  EXPECT_EQ(parse_published_runs(std::string(kHeader) + good, "r.csv").size(), 1u);
  auto message = [&](const std::string& text) {
    try {
      parse_published_runs(text, "r.csv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string bad = good;
  bad.replace(bad.find("1024,16"), 4, "10x4");
  EXPECT_EQ(message(std::string(kHeader) + bad), "r.csv:2: column hidden: '10x4' is not a number");
  bad = good;
  bad.replace(bad.find(",1.0,"), 5, ",,");
  EXPECT_NE(message(std::string(kHeader) + bad).find("r.csv:2: column step_time_s: the row gives no measurement"),
            std::string::npos);
  EXPECT_NE(message("id,layers\n").find("column hidden: is required"), std::string::npos);
  // Precision and recompute as sources write them: the first known name decides; an unknown one names the cell.
  bad = good;
  bad.replace(bad.find(",bf16,"), 6, ",BF16 mixed,full (uniform),");
  bad.replace(bad.find(",,1.0,"), 6, ",1.0,");  // the recompute cell above took the place of an empty one
  const auto runs = parse_published_runs(std::string(kHeader) + bad, "r.csv");
  EXPECT_EQ(runs[0].precision, "bf16");
  EXPECT_EQ(runs[0].recompute, "full");
  bad = good;
  bad.replace(bad.find(",bf16,"), 6, ",int8,");
  EXPECT_EQ(message(std::string(kHeader) + bad),
            "r.csv:2: column precision: 'int8' names none of nvfp4, mxfp8, fp8, bf16, fp16, 16bit, fp32/tf32");
}

// An optional optimizer_state_dtype column (NeMo 1.x's `optim.dtype` of Apex's distributed_fused_adam) keeps the master
// weights and both moments in 16 bits: a middle stage's static memory drops by (12 - 6) / DP bytes per parameter, and
// Nemotron-340B's check-set row (bench/validation/README.md) then fits without recompute. A bad value names the column.
TEST(Validate, OptimizerStateDtypeColumnKeepsStatesInSixteenBits) {
  std::string header = kHeader;
  header.insert(header.size() - 1, ",optimizer_state_dtype");
  const std::string base =
      "a,NeMo_perf_summary_24.07,GPT-tiny,4,1024,16,16,4096,32000,1024,,,,0.1,H100-SXM,8,8,450,400,2,2,2,1,1,,1,16,bf16,,,1.0,,,,,";
  auto static_bytes = [&](const std::string& dtype) {
    const RunJob j = job_for_run(stepsim::catalog::shipped().gpus, parse_published_runs(header + base + dtype + "\n", "r.csv").at(0));
    YAML::Emitter e;
    e << j.root;
    const auto w = workload::build_megatron_workload(test::job_from_yaml(e.c_str()));
    return std::pair{double(w.programs[0].static_memory.total()), double(w.programs[0].dense_parameters)};
  };
  const auto [fp32, params] = static_bytes("");
  const auto [bf16, same] = static_bytes("bf16");
  EXPECT_EQ(params, same);
  // By hand: fp32 states 4 + 4 + 4 bytes, bf16 2 + 2 + 2, over DP 2: 3 bytes per parameter less.
  EXPECT_NEAR(fp32 - bf16, params * (12.0 - 6.0) / 2, 2.0);
  const RunJob j = job_for_run(stepsim::catalog::shipped().gpus, parse_published_runs(header + base + "bf16\n", "r.csv").at(0));
  EXPECT_TRUE(j.root["training"]["precision_aware_optimizer"].as<bool>());
  for (const char* k : {"main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"})
    EXPECT_EQ(j.root["training"][k].as<std::string>(), "bf16") << k;
  try {
    parse_published_runs(header + base + "int4\n", "r.csv");
    ADD_FAILURE() << "int4 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "r.csv:2: column optimizer_state_dtype: 'int4' is not fp32, bf16 or fp16");
  }
  // The check set's Nemotron-340B row carries it, and validate's least-recompute rule then picks none.
  const auto runs = read_published_runs(test::source_dir() + "/bench/validation/nvidia-h100-benchmarks.csv");
  EXPECT_EQ(row(runs, "N2407-NEMOTRON-340B").optimizer_state_dtype, "bf16");
  const auto r = test::run_cli_env("STEPSIM_CALIBRATION_DB=/nonexistent/none.sqlite",
                                   "validate " + test::source_dir() +
                                       "/bench/validation/nvidia-h100-benchmarks.csv --only N2407-NEMOTRON-340B --verbose");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("% none"), std::string::npos) << r.output;
  // --verbose says which of the row's recipe columns were given, before the assumptions.
  EXPECT_NE(r.output.find("    from the row: optimizer_state_dtype: bf16\n"), std::string::npos) << r.output;
}

// The zero_stage and framework columns of published_runs_2.csv (issue 43 item 2d): the stated sharding is what is
// simulated (3 = parameters sharded too, even where dist_optimizer's text names no ZeRO stage), and a framework other
// than Megatron is said, not silently costed as Megatron-Core.
TEST(Validate, ZeroStageAndFrameworkColumnsAreRead) {
  std::string header = kHeader;
  header.insert(header.size() - 1, ",zero_stage,framework");
  const std::string base =
      "a,S,GPT-tiny,4,1024,16,16,4096,32000,1024,,,,0.1,H100-SXM,8,8,450,400,1,1,8,1,1,,1,16,bf16,,FSDP2 fully_shard,"
      "1.0,,,,,";
  auto job = [&](const std::string& cells) {
    return job_for_run(stepsim::catalog::shipped().gpus, parse_published_runs(header + base + cells + "\n", "r.csv").at(0));
  };
  RunJob j = job("3,deepspeed");
  EXPECT_EQ(j.root["training"]["zero_stage"].as<int>(), 3);
  EXPECT_FALSE(j.root["training"]["distributed_optimizer"]);
  bool said = false;
  for (const std::string& a : j.assumptions) said = said || a.find("framework deepspeed: its kernels") == 0;
  EXPECT_TRUE(said);
  EXPECT_NE(std::find(j.stated.begin(), j.stated.end(), "zero_stage: 3"), j.stated.end());
  // torchtitan has its profile: eager unless the notes name compile (the row's notes are empty).
  j = job("3,torchtitan");
  EXPECT_EQ(j.root["training"]["framework"].as<std::string>(), "torchtitan");
  EXPECT_FALSE(j.root["training"]["compile"].as<bool>());
  EXPECT_EQ(j.root["training"]["zero_stage"].as<int>(), 3);
  EXPECT_FALSE(j.root["training"]["attention_backend"]);  // a Megatron-Core key the torchtitan job would refuse
  j = job("1,megatron");
  EXPECT_FALSE(j.root["training"]["zero_stage"]);
  EXPECT_TRUE(j.root["training"]["distributed_optimizer"].as<bool>());
  for (const std::string& a : j.assumptions) EXPECT_EQ(a.find("framework"), std::string::npos) << a;
  j = job("0,");
  EXPECT_FALSE(j.root["training"]["distributed_optimizer"].as<bool>());
  try {
    job("4,megatron");
    ADD_FAILURE() << "zero_stage 4 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("r.csv:2: column zero_stage"), std::string::npos) << e.what();
  }
  try {
    job("3,fairseq");
    ADD_FAILURE() << "framework fairseq accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("column framework: 'fairseq' is not megatron, torchtitan, composer"),
              std::string::npos) << e.what();
  }
}

// An optional pipeline_layout column (a recipe's --pipeline-model-parallel-layout) replaces the interleaving rules:
// 4 layers, PP 2, "Et|t|t|tL" -> VP 2 with one layer per chunk.
TEST(Validate, PipelineLayoutColumnSetsTheSplit) {
  std::string header = kHeader;
  header.insert(header.size() - 1, ",pipeline_layout");
  const std::string row =
      "a,S,GPT-tiny,4,1024,16,16,4096,32000,1024,,,,0.1,H100-SXM,8,8,450,400,2,2,2,1,1,,1,16,bf16,,,1.0,,,,,Et|t|t|tL\n";
  const auto runs = parse_published_runs(header + row, "r.csv");
  const RunJob j = job_for_run(stepsim::catalog::shipped().gpus, runs.at(0));
  EXPECT_EQ(j.root["parallelism"]["pipeline_layout"].as<std::string>(), "Et|t|t|tL");
  YAML::Emitter e;
  e << j.root;
  const spec::JobSpec job = test::job_from_yaml(e.c_str());
  EXPECT_EQ(job.parallelism.virtual_stages, 2);
  EXPECT_EQ(job.parallelism.pipeline_layers, (std::vector<int>{1, 1, 1, 1}));
}

// A recipe's --recompute-modules as a column: the job runs selective recompute of exactly those modules (the DeepSeek-V3
// 25.09 check row's "mla_up_proj mlp"); they apply to selective recompute only, so another recompute is refused, and a
// name Megatron-Core does not know is refused by the job with its key.
TEST(Validate, RecomputeModulesColumnSetsSelectiveRecomputeOfThoseModules) {
  std::string header = kHeader;
  header.insert(header.size() - 1, ",recompute_modules");
  const std::string body = "GPT-tiny,4,1024,16,16,4096,32000,1024,,,,0.1,H100-SXM,8,8,450,400,2,2,2,1,1,,1,16,bf16,";
  const auto runs = parse_published_runs(header + "a,S," + body + ",,1.0,,,,,core_attn  MLP\n", "r.csv");
  const RunJob j = job_for_run(stepsim::catalog::shipped().gpus, runs.at(0));
  EXPECT_EQ(j.root["training"]["recompute"].as<std::string>(), "selective");
  ASSERT_EQ(j.root["training"]["recompute_modules"].size(), 2u);
  EXPECT_EQ(j.root["training"]["recompute_modules"][1].as<std::string>(), "mlp");
  EXPECT_NE(std::find(j.stated.begin(), j.stated.end(), "recompute_modules: core_attn mlp"), j.stated.end());
  YAML::Emitter e;
  e << j.root;
  const spec::JobSpec job = test::job_from_yaml(e.c_str());
  EXPECT_TRUE(job.training.recomputes(spec::RecomputeModule::Mlp));
  EXPECT_TRUE(job.training.recomputes(spec::RecomputeModule::CoreAttn));
  EXPECT_FALSE(job.training.recomputes(spec::RecomputeModule::Layernorm));
  try {
    (void)parse_published_runs(header + "b,S," + body + "full,,1.0,,,,,mlp\n", "r.csv");
    ADD_FAILURE() << "full recompute with modules was accepted";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("recompute_modules: applies to selective recompute only"), std::string::npos)
        << err.what();
  }
  const auto bad = parse_published_runs(header + "c,S," + body + ",,1.0,,,,,attention\n", "r.csv");
  YAML::Emitter e2;
  e2 << job_for_run(stepsim::catalog::shipped().gpus, bad.at(0)).root;
  EXPECT_NE(test::job_error(e2.c_str()).find("training.recompute_modules"), std::string::npos)
      << test::job_error(e2.c_str());
}

// Issue 13 item 4: each row carries the 80% interval of its kind's band and whether the measured step is inside; the
// table by architecture and kind counts them and gives the spread of the errors. Rows measured at exactly the
// prediction (error 0: inside any band) and at twice it (error -0.5: outside every shipped band), dense and MoE.
TEST(Validate, IntervalCoverageAndErrorSpreadByKind) {
  const std::string dense = "GPT-tiny,4,1024,16,16,4096,32000,1024,,,,0.1,H100-SXM,8,8,450,400,1,1,8,1,1,,1,16,bf16,full,,";
  // The MoE rows' layer has enough GPU work per forward (16K tokens, hidden 4096) not to be host-bound, whose
  // interval reaches higher than the band (MoeHostNote.ValidateCountsTheHostBoundStepInsideTheInterval).
  const std::string moe =
      "GPT-tiny-moe,4,4096,32,32,16384,32000,16384,8,2,4096,0.1,H100-SXM,8,8,450,400,1,1,8,1,8,,1,16,bf16,full,,";
  auto predicted = [&](const std::string& body) {
    const std::string csv = test::write_temp("probe.csv", std::string(kHeader) + "p,S," + body + "1.0,,,,\n");
    const std::string out = test::write_temp("probe.json", "");
    const auto r = test::run_cli("validate " + csv + " --json " + out);
    EXPECT_EQ(r.code, 0) << r.output;
    return nlohmann::json::parse(test::read_file(out))["rows"][0]["predicted_step_time_s"].get<double>();
  };
  const double pd = predicted(dense), pm = predicted(moe);
  char rows[1024];
  std::snprintf(rows, sizeof rows, "d_in,S,%s%.9g,,,,\nd_out,S,%s%.9g,,,,\nm_in,S,%s%.9g,,,,\nm_out,S,%s%.9g,,,,\n",
                dense.c_str(), pd, dense.c_str(), 2 * pd, moe.c_str(), pm, moe.c_str(), 2 * pm);
  const std::string csv = test::write_temp("kinds.csv", std::string(kHeader) + rows);
  const std::string out = test::write_temp("kinds.json", "");
  const auto r = test::run_cli("validate " + csv + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(test::read_file(out));
  ASSERT_EQ(j["rows"].size(), 4u);
  const cost::EfficiencyTable hopper = stepsim::catalog::shipped().efficiency.resolve_arch("hopper");
  for (const auto& row : j["rows"]) {
    const bool is_moe = row["id"].get<std::string>()[0] == 'm';
    EXPECT_EQ(row["kind"], is_moe ? "moe" : "dense");
    EXPECT_EQ(row["arch"], "hopper");
    // measured = predicted / (1 + error) for error in the kind's band.
    // The kind's band, at least new_source_interval's (the shipped calibration: data/efficiency.yaml).
    const hw::KindInterval band = hopper.prediction_interval_by_kind.at(is_moe ? "moe" : "dense");
    const double low = std::min(band.low, hopper.new_source_interval->low);
    const double high = std::max(band.high, hopper.new_source_interval->high);
    const double p = row["predicted_step_time_s"].get<double>();
    EXPECT_NEAR(row["predicted_interval_s"][0].get<double>(), p / (1 + high), 1e-12);
    EXPECT_NEAR(row["predicted_interval_s"][1].get<double>(), p / (1 + low), 1e-12);
    EXPECT_EQ(row["measured_inside_interval"], row["id"].get<std::string>().find("_in") != std::string::npos);
  }
  ASSERT_EQ(j["by_kind"].size(), 2u);
  for (const auto& b : j["by_kind"]) {
    EXPECT_EQ(b["rows"], 2);
    EXPECT_EQ(b["rows_with_interval"], 2);
    EXPECT_EQ(b["measured_inside_interval"], 1);
    // Errors 0 and -0.5 (to the printed precision of the measured step): 10th percentile -0.45, 90th -0.05.
    EXPECT_NEAR(b["error_p10"].get<double>(), -0.45, 1e-6);
    EXPECT_NEAR(b["error_p90"].get<double>(), -0.05, 1e-6);
  }
  EXPECT_NE(r.output.find("hopper moe                        2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 of 2"), std::string::npos) << r.output;
}

// The weighted percentile by hand: each value at the middle of its share of the cumulative weight, linear between.
// Equal weights on 0 and 1 sit at 0.25 and 0.75: the median is 0.5, the 10th percentile the lowest value (below the
// first middle), the 60th 0.7. Weights 3, 1 on -0.3 and 0.1 sit at 0.375 and 0.875: the 50th percentile is
// -0.3 + (0.5 - 0.375) / 0.5 x 0.4 = -0.2.
TEST(Validate, WeightedQuantileByHand) {
  EXPECT_DOUBLE_EQ(validate::weighted_quantile({{1, 1}, {0, 1}}, 0.5), 0.5);
  EXPECT_DOUBLE_EQ(validate::weighted_quantile({{1, 1}, {0, 1}}, 0.1), 0.0);
  EXPECT_DOUBLE_EQ(validate::weighted_quantile({{1, 1}, {0, 1}}, 0.9), 1.0);
  EXPECT_NEAR(validate::weighted_quantile({{1, 1}, {0, 1}}, 0.6), 0.7, 1e-12);
  EXPECT_NEAR(validate::weighted_quantile({{0.1, 1}, {-0.3, 3}}, 0.5), -0.2, 1e-12);
  EXPECT_DOUBLE_EQ(validate::weighted_quantile({}, 0.5), 0.0);
}

// Several CSVs are one set: rows of both, sources weighted equally in the "all runs" band (new_source_interval is
// made this way), a row id in two files refused naming both. Source A has three rows at error 0 (measured =
// predicted), source B one at -0.5 (measured twice the prediction): weights 1/3 each and 1 (total 2); sorted, -0.5
// sits at 1/4 and the zeros at 7/12, 9/12, 11/12: 10th percentile -0.5, 90th 0.
TEST(Validate, SeveralFilesAreOneSetWithSourcesWeightedEqually) {
  const std::string body = "GPT-tiny,4,1024,16,16,4096,32000,1024,,,,0.1,H100-SXM,8,8,450,400,1,1,8,1,1,,1,16,bf16,full,,";
  const std::string probe = test::write_temp("probe1.csv", std::string(kHeader) + "p,S," + body + "1.0,,,,\n");
  const std::string pout = test::write_temp("probe1.json", "");
  ASSERT_EQ(test::run_cli("validate " + probe + " --json " + pout).code, 0);
  const double p = nlohmann::json::parse(test::read_file(pout))["rows"][0]["predicted_step_time_s"].get<double>();
  char a[1024], b[512];
  std::snprintf(a, sizeof a, "a1,A,%s%.9g,,,,\na2,A,%s%.9g,,,,\na3,A,%s%.9g,,,,\n", body.c_str(), p, body.c_str(), p,
                body.c_str(), p);
  std::snprintf(b, sizeof b, "b1,B,%s%.9g,,,,\n", body.c_str(), 2 * p);
  const std::string fa = test::write_temp("set_a.csv", std::string(kHeader) + a);
  const std::string fb = test::write_temp("set_b.csv", std::string(kHeader) + b);
  const std::string out = test::write_temp("set.json", "");
  const auto r = test::run_cli("validate " + fa + " " + fb + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(test::read_file(out));
  ASSERT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["rows"][3]["id"], "b1");
  EXPECT_EQ(j["all_sources"]["sources"], 2);
  EXPECT_EQ(j["all_sources"]["rows"], 4);
  EXPECT_NEAR(j["all_sources"]["error_p10"].get<double>(), -0.5, 1e-6);
  EXPECT_NEAR(j["all_sources"]["error_p90"].get<double>(), 0.0, 1e-6);
  // Unweighted, three zeros of four would put the 10th percentile at -0.35.
  EXPECT_NEAR(validate::quantile({0, 0, 0, -0.5}, 0.1), -0.35, 1e-12);
  EXPECT_NE(r.output.find("2 sources, weighted equally"), std::string::npos) << r.output;
  const std::string dup = test::write_temp("set_dup.csv", std::string(kHeader) + a);
  const auto d = test::run_cli("validate " + fa + " " + dup);
  EXPECT_EQ(d.code, 2) << d.output;
  EXPECT_NE(d.output.find(dup + ": line 2: row id 'a1' is also in " + fa), std::string::npos) << d.output;
}

TEST(Validate, CommandReportsRowsErrorsAndFailures) {
  // Row a: a small job measured at 2x what stepsim predicts for it (the test reads the prediction back and checks
  // the error arithmetic); row b: a TP of 3 on 8 GPUs -> failed, exit 2 (bad input; 1 is for internal errors).
  const std::string rows = std::string(kHeader) +
      "a,S,GPT-tiny,4,1024,16,16,4096,32000,1024,,,,0.1,H100-SXM,8,8,450,400,2,2,2,1,1,,1,16,bf16,full,,1.0,,,,\n"
      "b,T,GPT-tiny,4,1024,16,16,4096,32000,1024,,,,0.1,H100-SXM,8,8,450,400,3,1,,1,1,,1,16,bf16,full,,1.0,,,,\n";
  const std::string csv = test::write_temp("runs.csv", rows);
  const std::string out = test::write_temp("runs.json", "");
  const auto r = test::run_cli("validate " + csv + " --json " + out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("1 row(s) could not be simulated"), std::string::npos) << r.output;
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["rows"].size(), 1u);
  const auto& a = j["rows"][0];
  EXPECT_EQ(a["id"], "a");
  EXPECT_DOUBLE_EQ(a["measured_step_time_s"].get<double>(), 1.0);
  const double p = a["predicted_step_time_s"].get<double>();
  EXPECT_GT(p, 0);
  EXPECT_DOUBLE_EQ(a["error"].get<double>(), p - 1.0);
  EXPECT_DOUBLE_EQ(j["mape"].get<double>(), std::fabs(p - 1.0));
  EXPECT_DOUBLE_EQ(j["mean_signed_error"].get<double>(), p - 1.0);
  ASSERT_EQ(j["failed"].size(), 1u);
  EXPECT_EQ(j["failed"][0]["id"], "b");
  EXPECT_NE(j["failed"][0]["message"].get<std::string>().find("key parallelism"), std::string::npos);
  // The row's peak memory and the GPU's capacity come with it.
  EXPECT_GT(a["peak_memory_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(a["capacity_bytes"].get<int64_t>(), int64_t{80} << 30);
  // --only simulates the listed row alone (row b, which is refused, is not run: exit 0).
  const auto only = test::run_cli("validate " + csv + " --only a --verbose");
  EXPECT_EQ(only.code, 0) << only.output;
  EXPECT_NE(only.output.find("memory: peak "), std::string::npos) << only.output;
  // --jobs-dir writes the job each row ran; `stepsim simulate` on it gives the same step time.
  const std::string dir = test::temp_dir() + "validate-jobs";
  const auto written = test::run_cli("validate " + csv + " --only a --jobs-dir " + dir);
  ASSERT_EQ(written.code, 0) << written.output;
  const std::string summary = dir + "/a.json";
  const auto again = test::run_cli("simulate " + dir + "/a.yaml --quiet --json " + summary);
  ASSERT_EQ(again.code, 0) << again.output;
  std::ifstream sj(summary);
  const nlohmann::json s = nlohmann::json::parse(sj);
  EXPECT_DOUBLE_EQ(s["step_time_s"].get<double>(), p);
  // Bad input: exit 2, one line naming the file.
  const std::string broken = test::write_temp("broken.csv", std::string(kHeader) + "x,S,G,4\n");
  const auto b = test::run_cli("validate " + broken);
  EXPECT_EQ(b.code, 2) << b.output;
  EXPECT_NE(b.output.find("broken.csv:2"), std::string::npos) << b.output;
}

// Issue 48 item 9: a column named twice in a CSV header was read from one copy and the other silently ignored; every
// CSV reader now refuses it (io/csv_table.hpp), naming the file, line and column.
TEST(Validate, AColumnNamedTwiceIsRefused) {
  std::string header = kHeader;
  header.insert(header.size() - 1, ",GPU");  // "gpu" again, in other case
  try {
    (void)parse_published_runs(header, "r.csv");
    ADD_FAILURE() << "a duplicated column was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("r.csv:1: column 'GPU' appears twice in the header"), std::string::npos)
        << e.what();
  }
  const std::string csv = test::write_temp("dup-column.csv", header);
  const auto r = test::run_cli("validate " + csv);
  EXPECT_EQ(r.code, 2) << r.output;
}

// data/efficiency.yaml's torchtitan band is what `validate` prints for the development file's torchtitan rows (its
// table by architecture and framework), to the three decimals shipped.
TEST(Validate, ShippedFrameworkBandIsWhatTheCommandPrints) {
  const std::string out = test::temp_dir() + "v2-bands.json";
  const auto r = test::run_cli_env("STEPSIM_CALIBRATION_DB=/nonexistent/none.sqlite",
                                   "validate " + test::source_dir() +
                                       "/../shared/data/published-runs/published_runs_2.csv --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(test::read_file(out));
  const hw::KindInterval shipped =
      stepsim::catalog::shipped().efficiency.resolve_arch("hopper").prediction_interval_by_framework.at("torchtitan");
  bool found = false;
  for (const auto& b : j["by_framework_arch"]) {
    if (b["arch"] != "hopper" || b["framework"] != "torchtitan") continue;
    found = true;
    EXPECT_EQ(b["rows"].get<int>(), shipped.runs);
    EXPECT_NEAR(b["error_p10"].get<double>(), shipped.low, 5e-4);
    EXPECT_NEAR(b["error_p90"].get<double>(), shipped.high, 5e-4);
  }
  EXPECT_TRUE(found);
}

// The torchtitan rows of the development file as torchtitan ran them (docs/VALIDATION-RULES.md): compiled where the
// notes name compile or async TP (which torchtitan refuses without compile), and FSDP2 under pipeline parallelism
// costed as ZeRO-1 (one gather and one reduce-scatter per step).
TEST(Validate, TorchtitanRowsAreCompiledWhereTheirNotesSayAndShardAsUnderPipelining) {
  const auto runs = read_published_runs(test::source_dir() + "/../shared/data/published-runs/published_runs_2.csv");
  auto job = [&](const std::string& id) {
    for (const PublishedRun& r : runs) {
      if (r.id == id) return job_for_run(stepsim::catalog::shipped().gpus, r);
    }
    ADD_FAILURE() << id << " not in the file";
    return RunJob{};
  };
  EXPECT_FALSE(job("TT24-T1-8B-8-fsdp-eager").root["training"]["compile"].as<bool>());
  EXPECT_TRUE(job("TT24-T1-8B-8-fsdp-compile").root["training"]["compile"].as<bool>());
  EXPECT_TRUE(job("TT24-T4-70B-256-2D-asyncTP").root["training"]["compile"].as<bool>());  // notes: "+ AsyncTP" only
  const RunJob pp = job("TT24-T5-405B-512-1F1B");
  EXPECT_FALSE(pp.root["training"]["zero_stage"]);
  EXPECT_TRUE(pp.root["training"]["distributed_optimizer"].as<bool>());
  EXPECT_EQ(job("TT24-T4-70B-256-2D").root["training"]["zero_stage"].as<int>(), 3);
  // Float8 without "compile" in the notes is compiled (torchtitan's float8.py); an unstated interleaving is torchtitan's
  // two stages per rank.
  const RunJob il = job("TT24-T5-405B-512-interleaved");
  EXPECT_TRUE(il.root["training"]["compile"].as<bool>());
  EXPECT_EQ(il.root["parallelism"]["virtual_stages"].as<int>(), 2);
  for (const PublishedRun& r : runs) {  // every torchtitan row loads as a torchtitan job
    if (r.framework != "torchtitan") continue;
    const RunJob j = job_for_run(stepsim::catalog::shipped().gpus, r);
    const spec::JobSpec spec = spec::job_from_node(stepsim::catalog::shipped().gpus, j.root, r.id);
    EXPECT_EQ(spec.training.framework, spec::Framework::Torchtitan) << r.id;
  }
}

// A row whose framework column is blank is DeepSpeed's when its dist_optimizer names DeepSpeed (Megatron-DeepSpeed's
// ZeRO-1, DeepSpeed's ZeRO-3); a stated framework wins; such rows are costed as Megatron-Core's, with that said.
TEST(Validate, DeepSpeedRowsAreDeepSpeedsAndSaySo) {
  const std::string body = ",S,GPT-tiny,4,1024,16,16,4096,32000,1024,,,,0.1,A100-SXM4-80GB,8,8,300,200,1,1,8,1,1,,1,16,bf16,full,";
  const std::string csv = std::string(kHeader) + "ds" + body + "ZeRO-1 (DeepSpeed BF16_Optimizer),1.0,,,,\n" +
                          "mg" + body + "yes,1.0,,,,\n";
  const auto runs = parse_published_runs(csv, "f.csv");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].framework, "deepspeed");
  EXPECT_TRUE(runs[0].framework_inferred);
  EXPECT_EQ(runs[1].framework, "");
  EXPECT_FALSE(runs[1].framework_inferred);
  EXPECT_TRUE(framework_costed_as_megatron("deepspeed"));
  EXPECT_TRUE(framework_costed_as_megatron("composer"));
  EXPECT_FALSE(framework_costed_as_megatron("torchtitan"));
  EXPECT_FALSE(framework_costed_as_megatron(""));
  const RunJob job = job_for_run(stepsim::catalog::shipped().gpus, runs[0]);
  auto said = [&](const std::string& what) {
    return std::any_of(job.assumptions.begin(), job.assumptions.end(),
                       [&](const std::string& a) { return a.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(said("framework deepspeed (dist_optimizer names DeepSpeed)"));
  EXPECT_TRUE(said("costed as Megatron-Core's"));
}

// `calibrate compute` fits the GPU's clock to the runs of frameworks it models and names the others it left out: a
// DeepSpeed row measured at 10x its prediction would drag the clock, and does not.
TEST(Validate, CalibrateComputeLeavesOutFrameworksCostedAsMegatron) {
  // Layers wide enough to be GPU-bound, so the step measures the clock.
  const std::string body = ",S,GPT-4L,4,4096,32,32,16384,32000,4096,,,,0.9,A100-SXM4-80GB,8,8,300,200,1,1,8,1,1,,2,16,bf16,full,";
  const std::string probe = test::write_temp("cc-probe.csv", std::string(kHeader) + "p" + body + "yes,1.0,,,,\n");
  const std::string pj = test::write_temp("cc-probe.json", "");
  ASSERT_EQ(test::run_cli("validate " + probe + " --json " + pj).code, 0);
  const double predicted = nlohmann::json::parse(test::read_file(pj))["rows"][0]["predicted_step_time_s"].get<double>();
  char rows[512];
  std::snprintf(rows, sizeof rows, "mg%syes,%.9g,,,,\nds%sZeRO-3 (DeepSpeed),%.9g,,,,\n", body.c_str(), predicted,
                body.c_str(), 10 * predicted);
  const std::string csv = test::write_temp("cc.csv", std::string(kHeader) + rows);
  const std::string out = test::write_temp("cc.json", "");
  const auto r = test::run_cli("calibrate compute --runs " + csv + " --dry-run --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("not used: 1 run of framework deepspeed, costed as Megatron-Core's"), std::string::npos)
      << r.output;
  const auto j = nlohmann::json::parse(test::read_file(out));
  ASSERT_EQ(j["archs"].size(), 1u);
  EXPECT_EQ(j["archs"][0]["runs"], 1);
  // The one Megatron row measured at its own prediction: the clock stays the shipped one (to the grid's 0.001).
  EXPECT_NEAR(j["archs"][0]["sustained_clock"].get<double>(),
              stepsim::catalog::shipped().efficiency.resolve_arch("ampere").sustained_clock, 1.5e-3);
  EXPECT_EQ(j["left_out_by_framework"]["deepspeed"], nlohmann::json::array({"ds"}));
}

}  // namespace
}  // namespace stepsim::validate

namespace stepsim {
namespace {

TEST(Validate, BlackwellFileRunsRowByRowWithItsPrecisionsNamed) {
  // published_runs_blackwell.csv was refused whole for one nvfp4 cell, then its nvfp4 rows alone. Now every row runs:
  // an nvfp4 row with Transformer Engine's NVFP4 recipe (saying what it assumes), a Megatron mxfp8 row with the mxfp8
  // recipe, a torchtitan (torchao) mxfp8 row as torchtitan's current scaling, saying so.
  const std::string out = test::temp_dir() + "blackwell.json";
  const auto r = test::run_cli_env("STEPSIM_CALIBRATION_DB=/nonexistent/none.sqlite",
                                   "validate " + test::source_dir() +
                                       "/../shared/data/published-runs/published_runs_blackwell.csv --json " + out);
  EXPECT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(test::read_file(out));
  EXPECT_EQ(j["rows"].size(), 56u);
  EXPECT_TRUE(j["failed"].empty()) << j["failed"].dump();
  bool nvfp4 = false, mxfp8 = false, domain = false;
  for (const auto& row : j["rows"]) {
    for (const auto& a : row["assumptions"]) {
      const std::string text = a.get<std::string>();
      if (row["id"] == "MBR2604P1-Llama3-70B-GB200-nvfp4-64") nvfp4 |= text.find("nvfp4: Transformer Engine's") == 0;
      if (row["id"] == "TT-B200pl-Llama3-8B-8-mxfp8-cublas") mxfp8 |= text.find("mxfp8 (torchao) costed as fp8") == 0;
      // 128 GPUs of NVL72 racks: 64 in each of two (whole trays, the same in each); it was refused as not a multiple
      // of 72.
      if (row["id"] == "DGXC2505-Llama3.1-405B-GB200-bf16-128") {
        domain |= text ==
                  "NVLink domain of 72 GPUs holding 128: 64 GPUs per domain (whole 4-GPU trays, the same in each)";
      }
    }
  }
  EXPECT_TRUE(nvfp4);
  EXPECT_TRUE(mxfp8);
  EXPECT_TRUE(domain);
  // data/efficiency.yaml's Blackwell bands are what the command prints at the shipped calibration (its tables by arch
  // and kind, and by arch and framework), to the three decimals shipped; the torchtitan band, of fewer than five runs,
  // covers every one of its runs and the dense band. Each run now has an interval, and most measured steps fall inside
  // it.
  const auto& blackwell = stepsim::catalog::shipped().efficiency.resolve_arch("blackwell");
  int kinds = 0;
  for (const auto& b : j["by_kind"]) {
    if (b["arch"] != "blackwell") continue;
    const hw::KindInterval shipped = blackwell.prediction_interval_by_kind.at(b["kind"].get<std::string>());
    ++kinds;
    EXPECT_EQ(b["rows"].get<int>(), shipped.runs) << b.dump();
    EXPECT_NEAR(b["error_p10"].get<double>(), shipped.low, 5e-4) << b.dump();
    EXPECT_NEAR(b["error_p90"].get<double>(), shipped.high, 5e-4) << b.dump();
    EXPECT_EQ(b["rows_with_interval"].get<int>(), shipped.runs) << b.dump();
    EXPECT_GE(b["measured_inside_interval"].get<int>(), shipped.runs * 3 / 4) << b.dump();
  }
  EXPECT_EQ(kinds, 2);
  const hw::KindInterval tt = blackwell.prediction_interval_by_framework.at("torchtitan");
  for (const auto& b : j["by_framework_arch"]) {
    if (b["arch"] != "blackwell" || b["framework"] != "torchtitan") continue;
    EXPECT_EQ(b["rows"].get<int>(), tt.runs);
    EXPECT_LE(tt.low, b["error_p10"].get<double>() + 5e-4);
    EXPECT_GE(tt.high, blackwell.prediction_interval_by_kind.at("dense").high);
    EXPECT_EQ(b["measured_inside_interval"].get<int>(), tt.runs);
  }
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

TEST(Validate, AJobFillingPartOfAnNvl72RackIsToldHowToSayIt) {
  const std::string e = test::job_error(
      "model: {name: m, num_layers: 2, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
      " vocab_size: 32000, seq_length: 1024}\n"
      "training: {micro_batch_size: 1, global_batch_size: 128}\n"
      "cluster: {gpu: GB200, num_gpus: 128, gpus_per_node: 72}\n");
  EXPECT_NE(e.find("128 must be a multiple of cluster.gpus_per_node 72 (a job filling part of each NVLink domain: "
                   "give the hosts as gpus_per_node and the domain as cluster.nvlink_domain, e.g. 4 and 72"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace stepsim
