// The torchtitan framework profile (training.framework: torchtitan): PyTorch eager kernels or Inductor's fusions
// (training.compile), op-level selective activation checkpointing, FSDP2's copy-out and gradients in the parameter
// dtype, and the refusals of what the profile does not cover. Every byte and FLOP count below is worked by hand from
// the Llama-style job of llama_yaml(): h 1024, 16 heads of 64 (4 KV groups), ffn 2816, sequence 1024, micro-batch 1
// (T = 1024 tokens), bf16 (beta 2), TP 1 unless said.
#include <gtest/gtest.h>

#include <string>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/catalog/efficiency_table.hpp"
#include "stepsim/validate/published_run.hpp"
#include "stepsim/validate/run_job.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

constexpr uint64_t T = 1024, H = 1024, FFN = 2816, KV = 4 * 64, Q = 16 * 64;

std::string llama_yaml(const std::string& training, int tensor = 1, const std::string& precision = "bf16") {
  return "model: {name: tiny-llama, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, num_query_groups: 4,"
         " ffn_hidden_size: 2816, activation: swiglu, normalization: rmsnorm, vocab_size: 32000, seq_length: 1024}\n"
         "parallelism: {tensor: " + std::to_string(tensor) + ", data: 2" +
         (tensor > 1 ? ", sequence_parallel: true" : "") + "}\n"
         "training: {micro_batch_size: 1, global_batch_size: 2, precision: " + precision + ", " + training + "}\n"
         "simulation: {host_time_scale: 0}\n"
         "cluster: {gpu: H100-SXM, num_gpus: " + std::to_string(2 * tensor) + "}\n";
}

workload::Workload build(const std::string& yaml) { return workload::build_megatron_workload(test::job_from_yaml(yaml)); }

const workload::Op* find_op(const workload::Program& p, const std::string& name, workload::Phase phase) {
  for (const workload::Op& op : p.ops) {
    if (p.name(op) == name && op.phase == phase) return &op;
  }
  return nullptr;
}

uint64_t op_bytes(const std::string& yaml, const std::string& name, workload::Phase phase) {
  const workload::Workload w = build(yaml);
  const workload::Op* op = find_op(w.programs[0], name, phase);
  return op ? op->bytes : 0;
}

using workload::Phase;

TEST(FrameworkTorchtitan, EagerRmsNormMovesEveryOpsTensorAndCompiledOneKernel) {
  // Eager forward: x.float() (2+4), pow (4+4), mean (4), x*rsqrt (4+4), type_as (4+2), *weight (2+2) = 36 B per
  // element. Backward: *weight's two products and the weight's reduction (12), type_as's cast (2+4), x*rsqrt's
  // product and its reduction for the rsqrt (8+16), mean's expansion (4), pow's self.pow(1) copy, * 2 and * grad
  // (8+8+12), the two gradients into x summed (12), float()'s cast back (4+2): 92 B. Each a plain PyTorch kernel,
  // timed as elementwise. Compiled: read x, write y (4 B); backward one pass reading x and dy and writing dx (6 B)
  // with dweight's partial sums beside it: Inductor's kernels, timed as elementwise (they stream near that rate:
  // test_torch_native_measured.cpp). Megatron-Core (Transformer Engine's fused norm): 4 B and 6 B.
  const uint64_t n = T * H;
  EXPECT_EQ(op_bytes(llama_yaml("framework: torchtitan"), "input_layernorm", Phase::Forward), 36 * n);
  EXPECT_EQ(op_bytes(llama_yaml("framework: torchtitan"), "input_layernorm_bwd", Phase::Backward), 92 * n);
  const workload::Workload eager = build(llama_yaml("framework: torchtitan"));
  EXPECT_EQ(find_op(eager.programs[0], "input_layernorm", Phase::Forward)->category,
            workload::ComputeCategory::Elementwise);
  const workload::Workload fused = build(llama_yaml("framework: torchtitan, compile: true"));
  EXPECT_EQ(find_op(fused.programs[0], "input_layernorm", Phase::Forward)->category,
            workload::ComputeCategory::Elementwise);
  EXPECT_EQ(op_bytes(llama_yaml("framework: torchtitan, compile: true"), "input_layernorm", Phase::Forward), 4 * n);
  EXPECT_EQ(op_bytes(llama_yaml("framework: torchtitan, compile: true"), "input_layernorm_bwd", Phase::Backward),
            6 * n);
  // The final norm is outside the compiled blocks: eager bytes either way.
  EXPECT_EQ(op_bytes(llama_yaml("framework: torchtitan, compile: true"), "final_layernorm", Phase::Forward), 36 * n);
  EXPECT_EQ(op_bytes(llama_yaml("framework: torchtitan, compile: true"), "final_layernorm_bwd", Phase::Backward),
            92 * n);
  EXPECT_EQ(op_bytes(llama_yaml("framework: megatron"), "input_layernorm", Phase::Forward), 4 * n);
  EXPECT_EQ(op_bytes(llama_yaml("framework: megatron"), "input_layernorm_bwd", Phase::Backward), 6 * n);
}

TEST(FrameworkTorchtitan, EagerSwigluRotaryAndRepeatKvAreTheirOwnKernels) {
  const std::string eager = llama_yaml("framework: torchtitan");
  // silu(w1 x) (2+2) then * w3 x (4+2): 10 B per FFN element; backward 18 B.
  EXPECT_EQ(op_bytes(eager, "swiglu", Phase::Forward), 10 * T * FFN);
  EXPECT_EQ(op_bytes(eager, "swiglu_bwd", Phase::Backward), 18 * T * FFN);
  // RoPE on Q (1024 wide) and K (256): float() 2+4, complex multiply 4+4, type_as 4+2 = 20 B per element.
  EXPECT_EQ(op_bytes(eager, "rotary_embedding", Phase::Forward), 20 * T * (Q + KV));
  // Compiled, the same bytes: Inductor generates no code for the complex multiply, which stays PyTorch's kernel
  // between two fused casts (measured: compiled RoPE takes 0.79x the eager time on an H200).
  EXPECT_EQ(op_bytes(llama_yaml("framework: torchtitan, compile: true"), "rotary_embedding", Phase::Forward),
            20 * T * (Q + KV));
  // repeat_kv writes K and V for all 16 heads: 2 B per element of 2 x 1024.
  EXPECT_EQ(op_bytes(eager, "repeat_kv", Phase::Forward), 2 * T * 2 * Q);
  EXPECT_EQ(op_bytes(eager, "repeat_kv_bwd", Phase::Backward), 2 * T * 2 * Q);
  // Megatron-Core has neither kernel (Transformer Engine's RoPE and grouped K/V in its attention).
  const workload::Workload mc = build(llama_yaml("framework: megatron"));
  EXPECT_EQ(find_op(mc.programs[0], "rotary_embedding", Phase::Forward), nullptr);
  EXPECT_EQ(find_op(mc.programs[0], "repeat_kv", Phase::Forward), nullptr);
  // Without grouping (num_query_groups = heads) torchtitan's repeat_kv returns its input: no kernel.
  std::string mha = eager;
  mha.replace(mha.find("num_query_groups: 4"), 19, "num_query_groups: 16");
  EXPECT_EQ(find_op(build(mha).programs[0], "repeat_kv", Phase::Forward), nullptr);
}

TEST(FrameworkTorchtitan, OpLevelSacRecomputesEverySecondMatmul) {
  // Matmuls in call order: wq, wk, wv, wo, w1, w3, w2; the policy recomputes the 2nd, 4th and 6th.
  const workload::Workload w = build(llama_yaml("framework: torchtitan, compile: true, recompute: selective"));
  const workload::Program& p = w.programs[0];
  const workload::Op* wk = find_op(p, "wk_recompute", Phase::Recompute);
  const workload::Op* wo = find_op(p, "wo_recompute", Phase::Recompute);
  const workload::Op* w3 = find_op(p, "w3_recompute", Phase::Recompute);
  ASSERT_TRUE(wk && wo && w3);
  EXPECT_DOUBLE_EQ(wk->flops, 2.0 * T * KV * H);
  EXPECT_DOUBLE_EQ(wo->flops, 2.0 * T * H * Q);
  EXPECT_DOUBLE_EQ(w3->flops, 2.0 * T * FFN * H);
  // Attention (SDPA) is saved, so never recomputed; every layer recomputes once per micro-batch.
  size_t recomputed = 0;
  for (const workload::Op& op : p.ops) {
    if (op.phase != Phase::Recompute) continue;
    EXPECT_EQ(p.name(op).find("core_attention"), std::string::npos) << p.name(op);
    if (p.name(op) == "wk_recompute") ++recomputed;
  }
  EXPECT_EQ(recomputed, 4u);
  // Megatron-Core's selective recompute with flash attention re-runs the attention core instead.
  const workload::Workload mc = build(llama_yaml("framework: megatron, recompute: selective"));
  EXPECT_NE(find_op(mc.programs[0], "core_attention_recompute", Phase::Recompute), nullptr);
  EXPECT_EQ(find_op(mc.programs[0], "wk_recompute", Phase::Recompute), nullptr);
}

TEST(FrameworkTorchtitan, OpLevelSacEagerCachesEverySavedOutputCompiledOnlyWhatTheBackwardReads) {
  // Eager, the policy caches the outputs of wq, wv, w1 and w2 (and, under TP, of both reduce-scatters) whether the
  // backward reads them or not; compiled, the partitioner saves only what the backward reads, and w2's output (with the
  // reduce-scatter after it) feeds the residual add alone. Same loss (eager) on both sides: 4 layers of the difference.
  for (int tp : {1, 2}) {
    const workload::Workload eager = build(llama_yaml("framework: torchtitan, recompute: selective", tp));
    const workload::Workload compiled =
        build(llama_yaml("framework: torchtitan, compile: true, compile_loss: false, recompute: selective", tp));
    const uint64_t w2_out = 2 * T * H, rs_out = tp > 1 ? 2 * (T / 2) * H : 0;  // bf16 [T, h]; its sequence shard
    EXPECT_EQ(eager.programs[0].stored_activation_peak - compiled.programs[0].stored_activation_peak,
              static_cast<int64_t>(4 * (w2_out + rs_out)))
        << "TP " << tp;
  }
}

TEST(FrameworkTorchtitan, OpLevelSacUnderFloat8RecomputesEveryProjectionTheBackwardNeeds) {
  // torchao's Float8Linear calls aten._scaled_mm, which the policy does not save: Q, K, V, w1 and w3 all re-run (w2's
  // output feeds only the residual add, which the backward does not need).
  const workload::Workload w = build(llama_yaml("framework: torchtitan, compile: true, recompute: selective", 1, "fp8"));
  const workload::Program& p = w.programs[0];
  const workload::Op* qkv = find_op(p, "wqkv_recompute", Phase::Recompute);
  const workload::Op* up = find_op(p, "w1_w3_recompute", Phase::Recompute);
  ASSERT_TRUE(qkv && up);
  EXPECT_DOUBLE_EQ(qkv->flops, 2.0 * T * (Q + 2 * KV) * H);
  EXPECT_DOUBLE_EQ(up->flops, 2.0 * T * 2 * FFN * H);
  EXPECT_NE(find_op(p, "wo_recompute", Phase::Recompute), nullptr);
}

TEST(FrameworkTorchtitan, UnderTensorParallelismTheSavedReduceScatterSparesWo) {
  // The functional reduce-scatter's output is saved, so wo's matmul (its only consumer) is not re-run; the
  // sequence-parallel all-gathers are not saved and run again.
  const workload::Workload w = build(llama_yaml("framework: torchtitan, compile: true, recompute: selective", 2));
  const workload::Program& p = w.programs[0];
  EXPECT_EQ(find_op(p, "wo_recompute", Phase::Recompute), nullptr);
  ASSERT_NE(find_op(p, "wk_recompute", Phase::Recompute), nullptr);
  EXPECT_DOUBLE_EQ(find_op(p, "wk_recompute", Phase::Recompute)->flops, 2.0 * T * (KV / 2) * H);
  EXPECT_NE(find_op(p, "attention_input_all_gather_recompute", Phase::Recompute), nullptr);
}

// tiny-llama at TP 2 with sequence parallelism, two sequences per micro-batch (T = 2048 tokens, whole tensors of
// T x H x 2 B = 4 MiB), full recompute.
std::string tp2_full_recompute_yaml(const std::string& framework) {
  return "model: {name: tiny-llama, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, num_query_groups: 4,"
         " ffn_hidden_size: 2816, activation: swiglu, normalization: rmsnorm, vocab_size: 32000, seq_length: 1024}\n"
         "parallelism: {tensor: 2, data: 2, sequence_parallel: true}\n"
         "training: {micro_batch_size: 2, global_batch_size: 4, precision: bf16, recompute: full, framework: " +
         framework + (framework == "torchtitan" ? ", compile: true" : "") + "}\n"
         "simulation: {host_time_scale: 0}\ncluster: {gpu: H100-SXM, num_gpus: 4}\n";
}

TEST(FrameworkTorchtitan, DTensorTpRunsElevenCollectivesPerRecomputedLayerWithChunkCatCopies) {
  const auto tp_collectives = [](const workload::Program& p) {
    size_t n = 0;
    for (const workload::Op& op : p.ops) {
      n += op.layer == 1 && op.kind == workload::OpKind::Collective && op.group == workload::GroupKind::Tp;
    }
    return n;
  };
  const workload::Workload tt = build(tp2_full_recompute_yaml("torchtitan"));
  const workload::Workload mc = build(tp2_full_recompute_yaml("megatron"));
  const workload::Program& p = tt.programs[0];
  // Megatron: forward 4, the recompute's 4, backward 4 and the two input re-gathers for the weight gradients. PyTorch
  // saves the gathered input (no re-gather), and the non-reentrant recompute stops at fc2's input (no fc2 GEMM,
  // no fc2 reduce-scatter).
  EXPECT_EQ(tp_collectives(mc.programs[0]), 14u);
  EXPECT_EQ(tp_collectives(p), 11u);
  EXPECT_EQ(find_op(p, "fc1_input_all_gather", Phase::Backward), nullptr);
  EXPECT_EQ(find_op(p, "fc2", Phase::Recompute), nullptr);
  EXPECT_NE(find_op(p, "attention_proj", Phase::Recompute), nullptr);
  EXPECT_NE(find_op(mc.programs[0], "fc2", Phase::Recompute), nullptr);
  // Each gather and reduce-scatter along the sequence reads and writes the whole tensor once more: 2 x 4 MiB.
  const uint64_t whole = 2 * 2 * T * H;
  for (const char* name : {"qkv_all_gather_chunk_cat", "fc1_all_gather_chunk_cat", "attention_reduce_scatter_chunk_cat",
                           "mlp_reduce_scatter_chunk_cat"}) {
    const workload::Op* op = find_op(p, name, Phase::Forward);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->bytes, 2 * whole) << name;
  }
  EXPECT_NE(find_op(p, "fc2_grad_all_gather_chunk_cat", Phase::Backward), nullptr);
  EXPECT_NE(find_op(p, "fc1_grad_reduce_scatter_chunk_cat", Phase::Backward), nullptr);
  EXPECT_EQ(find_op(mc.programs[0], "qkv_all_gather_chunk_cat", Phase::Forward), nullptr);
  // The recompute's QKV GEMM keeps its gathered input (T x H x 2 B) for the weight gradient; Megatron keeps the
  // sequence shard (half of it) and gathers it again.
  ASSERT_NE(find_op(p, "qkv_proj", Phase::Recompute), nullptr);
  EXPECT_EQ(find_op(p, "qkv_proj", Phase::Recompute)->mem_alloc_at_start, static_cast<int64_t>(whole));
  EXPECT_EQ(find_op(mc.programs[0], "qkv_proj", Phase::Recompute)->mem_alloc_at_start, static_cast<int64_t>(whole / 2));
}

TEST(FrameworkTorchtitan, EvenOneSequencePerMicroBatchIsRearrangedByACopy) {
  // PyTorch of 2024-25 concatenates after every gather along dim 1 (the view for a batch of one came in December 2025).
  std::string yaml = tp2_full_recompute_yaml("torchtitan");
  yaml.replace(yaml.find("micro_batch_size: 2, global_batch_size: 4"), 41, "micro_batch_size: 1, global_batch_size: 2");
  const workload::Workload w = build(yaml);
  const workload::Program& p = w.programs[0];
  for (const char* name : {"qkv_all_gather_chunk_cat", "attention_reduce_scatter_chunk_cat"}) {
    ASSERT_NE(find_op(p, name, Phase::Forward), nullptr) << name;
    EXPECT_EQ(find_op(p, name, Phase::Forward)->bytes, 2 * 2 * T * H) << name;  // T = 1024 tokens now
  }
}

TEST(FrameworkTorchtitan, TheEmbeddingAndTheHeadRearrangeAndTheOutputLayerKeepsItsGatheredInput) {
  const workload::Workload w = build(tp2_full_recompute_yaml("torchtitan"));
  const workload::Program& p = w.programs[0];
  const uint64_t whole = 2 * 2 * T * H;  // two sequences of T tokens, bf16
  for (const auto& [name, phase] : {std::pair{"embedding_reduce_scatter_chunk_cat", Phase::Forward},
                                    std::pair{"output_all_gather_chunk_cat", Phase::Forward},
                                    std::pair{"embedding_grad_all_gather_chunk_cat", Phase::Backward},
                                    std::pair{"output_layer_grad_reduce_scatter_chunk_cat", Phase::Backward}}) {
    const workload::Op* op = find_op(p, name, phase);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->bytes, 2 * whole) << name;
  }
  // The output layer keeps the gathered T x H input; Megatron keeps its sequence shard and gathers again.
  EXPECT_EQ(find_op(p, "output_layer", Phase::Forward)->mem_alloc_at_start, static_cast<int64_t>(whole));
  const workload::Workload mc = build(tp2_full_recompute_yaml("megatron"));
  EXPECT_EQ(find_op(mc.programs[0], "output_layer", Phase::Forward)->mem_alloc_at_start,
            static_cast<int64_t>(whole / 2));
  EXPECT_NE(find_op(mc.programs[0], "output_layer_input_all_gather", Phase::Backward), nullptr);
  EXPECT_EQ(find_op(p, "output_layer_input_all_gather", Phase::Backward), nullptr);
}

TEST(FrameworkTorchtitan, TheRecomputeStopsAtTheDownProjectionsInputWhichItKeeps) {
  // TP 1, micro-batch 1: T = 1024 tokens. The recomputed SwiGLU holds its input (w1 and w3 outputs, 2 x FFN) and
  // fc2's input (FFN), bf16, until the backward: 2 B x T x 3 FFN; fc2 itself does not re-run.
  const workload::Workload w = build(llama_yaml("framework: torchtitan, compile: true, recompute: full"));
  const workload::Program& p = w.programs[0];
  EXPECT_EQ(find_op(p, "fc2", Phase::Recompute), nullptr);
  ASSERT_NE(find_op(p, "swiglu", Phase::Recompute), nullptr);
  // (less the layer's working buffers, held while its last op runs)
  const workload::Op* act = find_op(p, "swiglu", Phase::Recompute);
  EXPECT_EQ(act->mem_alloc_at_start - act->mem_transient, static_cast<int64_t>(2 * T * 3 * FFN));
  // HF's models under DeepSpeed checkpoint reentrantly: the whole layer re-runs.
  const workload::Workload ds = build(llama_yaml("framework: deepspeed, zero_stage: 3, recompute: full"));
  EXPECT_NE(find_op(ds.programs[0], "fc2", Phase::Recompute), nullptr);
}

TEST(FrameworkTorchtitan, Fsdp2CopiesEachGatherOutAndWritesGradientsInBf16) {
  const workload::Workload w = build(llama_yaml("framework: torchtitan, compile: true, zero_stage: 3"));
  const workload::Program& p = w.programs[0];
  // One layer's parameters: wq, wk, wv, wo (1024 x (1024 + 256 + 256 + 1024)), w1, w3, w2 (3 x 1024 x 2816) and two
  // norms' 1024: read and written once in bf16.
  const uint64_t layer_params = H * (Q + 2 * KV + Q) + 3 * H * FFN + 2 * H;
  bool found = false;
  for (const workload::Op& op : p.ops) {
    if (p.name(op) != "fsdp2_all_gather_copy_out" || op.layer != 1) continue;
    EXPECT_EQ(op.bytes, 2 * 2 * layer_params);
    found = true;
  }
  EXPECT_TRUE(found);
  // The wgrad GEMM writes a bf16 gradient (no fp32 main_grad read and written): 6 B per weight fewer than Megatron's.
  const uint64_t tt = find_op(p, "fc1_wgrad", Phase::Backward)->bytes;
  const workload::Workload mc = build(llama_yaml("framework: megatron, zero_stage: 3"));
  EXPECT_EQ(find_op(mc.programs[0], "fc1_wgrad", Phase::Backward)->bytes - tt, 6 * H * 2 * FFN);
  EXPECT_EQ(find_op(mc.programs[0], "fsdp2_all_gather_copy_out", Phase::Forward), nullptr);
}

TEST(FrameworkTorchtitan, EagerIsSlowerThanCompiled) {
  const auto step = [](const std::string& yaml) {
    return sim::run_simulation(catalog::shipped(), test::job_from_yaml(yaml), {0}).result.step_ns;
  };
  const int64_t eager = step(llama_yaml("framework: torchtitan"));
  const int64_t compiled = step(llama_yaml("framework: torchtitan, compile: true"));
  EXPECT_GT(eager, compiled);
}

TEST(FrameworkTorchtitan, ItsIntervalIsTheTorchtitanRunsBandHoldingThePrediction) {
  // data/efficiency.yaml: the calibration runs are Megatron-Core's; a torchtitan job on Hopper takes the band of the 18
  // torchtitan runs ([-0.090, 0.048]), widened to hold the prediction and new_source_interval (what a
  // run from a source never seen can expect: [-0.241, +0.076]), so [-0.241, +0.076].
  const cost::EfficiencyTable hopper = catalog::shipped().efficiency.resolve_arch("hopper");
  ASSERT_TRUE(hopper.new_source_interval.has_value());
  ASSERT_EQ(hopper.prediction_interval_by_framework.count("torchtitan"), 1u);
  const hw::KindInterval band = hopper.prediction_interval_by_framework.at("torchtitan");
  const std::string yaml =
      llama_yaml("framework: torchtitan, compile: true") + "simulation: {host_time_scale: 0, calibration_store: none}\n";
  std::string job = yaml;
  job.erase(job.find("simulation: {host_time_scale: 0}\n"), std::string("simulation: {host_time_scale: 0}\n").size());
  sim::ComputeCalibration cal;
  sim::make_compute_model(catalog::shipped(), test::job_from_yaml(job), &cal);
  ASSERT_TRUE(cal.interval.has_value());
  EXPECT_DOUBLE_EQ((*cal.interval)[0], std::min(band.low, hopper.new_source_interval->low));
  EXPECT_DOUBLE_EQ((*cal.interval)[1], std::max({0.0, band.high, hopper.new_source_interval->high}));
  EXPECT_NEAR((*cal.interval)[0], -0.244, 1e-12);
  EXPECT_NEAR((*cal.interval)[1], 0.077, 1e-12);
  EXPECT_EQ(cal.interval_kind, "torchtitan");
  EXPECT_EQ(cal.interval_runs, band.runs);
  // The same model under Megatron-Core keeps the dense band of the calibration runs.
  std::string mc = job;
  mc.replace(mc.find("framework: torchtitan, compile: true"), 36, "framework: megatron");
  sim::ComputeCalibration mcal;
  sim::make_compute_model(catalog::shipped(), test::job_from_yaml(mc), &mcal);
  EXPECT_EQ(mcal.interval_kind, "dense");
}

TEST(FrameworkTorchtitan, RefusesWhatItsProfileDoesNotHave) {
  auto error = [](const std::string& training, const std::string& precision = "bf16") {
    return test::job_error(llama_yaml(training, 1, precision));
  };
  EXPECT_NE(error("framework: composer").find("training.framework"), std::string::npos);
  EXPECT_NE(error("framework: composer").find("not modelled yet"), std::string::npos);
  EXPECT_NE(error("compile: true").find("framework: torchtitan"), std::string::npos);
  EXPECT_NE(error("framework: torchtitan, recompute: selective, recompute_modules: [mlp]").find("recompute_modules"),
            std::string::npos);
  EXPECT_NE(error("framework: torchtitan, tp_comm_overlap: true").find("Megatron-Core's"), std::string::npos);
  EXPECT_NE(error("framework: torchtitan, cuda_graphs: true").find("cuda_graphs"), std::string::npos);
  EXPECT_NE(error("framework: torchtitan, fp8_recipe: delayed", "fp8").find("current only"), std::string::npos);
  EXPECT_EQ(error("framework: torchtitan, fp8_recipe: current", "fp8"), "");
  std::string gelu = llama_yaml("framework: torchtitan");
  gelu.replace(gelu.find("activation: swiglu"), 18, "activation: gelu");
  EXPECT_NE(test::job_error(gelu).find("Llama 3 model (RMSNorm, RoPE, SwiGLU, no biases)"), std::string::npos);
  EXPECT_EQ(error("framework: torchtitan, compile: true, recompute: full, zero_stage: 3"), "");
}

TEST(FrameworkTorchtitan, Float8DefaultsToTensorwiseDynamicScaling) {
  const spec::JobSpec j = test::job_from_yaml(llama_yaml("framework: torchtitan", 1, "fp8"));
  EXPECT_EQ(j.training.fp8_recipe, spec::Fp8Recipe::Current);
  EXPECT_TRUE(j.training.overlap_grad_reduce);  // FSDP2 reduces on its own stream
}

// PyTorch's SDPA before 2.11 runs its own FlashAttention-2, whose sm80 kernels reach 0.147 / 0.141 of a B200's bf16
// peak (data/efficiency.yaml, kernel microbenchmarks) where cuDNN's reach the table's 0.600 / 0.500, and 0.339 / 0.326
// of an H100's (the FA3 paper's FA2 figures) against the table's 0.417 / 0.347; Ampere gives no figures of its own
// (its table is FlashAttention-2's), so there the two backends cost the same.
TEST(FrameworkTorchtitan, SdpaFlashOnBlackwellRunsFlashAttention2sRate) {
  const cost::EfficiencyTable bw = catalog::shipped().efficiency.resolve_arch("blackwell");
  EXPECT_DOUBLE_EQ(bw.sdpa_flash_forward, 0.147);
  EXPECT_DOUBLE_EQ(bw.sdpa_flash_backward, 0.141);
  const cost::EfficiencyTable hopper = catalog::shipped().efficiency.resolve_arch("hopper");
  EXPECT_DOUBLE_EQ(hopper.sdpa_flash_forward, 0.339);
  EXPECT_DOUBLE_EQ(hopper.sdpa_flash_backward, 0.326);
  const cost::EfficiencyTable ampere = catalog::shipped().efficiency.resolve_arch("ampere");
  EXPECT_DOUBLE_EQ(ampere.sdpa_flash_forward, ampere.attention_forward);
  EXPECT_DOUBLE_EQ(ampere.sdpa_flash_backward, ampere.attention_backward);
  auto attention_ns = [](const std::string& gpu, const std::string& backend, workload::Phase phase) {
    std::string yaml = llama_yaml("framework: torchtitan, compile: true, sdpa_backend: " + backend);
    yaml.replace(yaml.find("gpu: H100-SXM"), 13, "gpu: " + gpu);
    const spec::JobSpec job = test::job_from_yaml(yaml);
    const workload::Workload w = workload::build_megatron_workload(job);
    const auto model = sim::make_compute_model(catalog::shipped(), job);
    for (const workload::Op& op : w.programs[0].ops) {
      if (op.category == workload::ComputeCategory::Attention && op.phase == phase) return model->duration_ns(op);
    }
    return int64_t{-1};
  };
  for (workload::Phase phase : {workload::Phase::Forward, workload::Phase::Backward}) {
    const double flash = attention_ns("B200", "flash", phase), cudnn = attention_ns("B200", "cudnn", phase);
    ASSERT_GT(cudnn, 0);
    // The tensor-core part scales by the rates' ratio (600 / 147 forward, 500 / 141 backward); the launch gap does
    // not, and at this small shape (1K tokens, 16 heads) it keeps the ratio well below: at least twice as slow.
    const double rates = phase == workload::Phase::Forward ? 0.600 / 0.147 : 0.500 / 0.141;
    EXPECT_GT(flash / cudnn, 2.0) << static_cast<int>(phase);
    EXPECT_LE(flash / cudnn, rates) << static_cast<int>(phase);
    EXPECT_GT(attention_ns("H100-SXM", "flash", phase), attention_ns("H100-SXM", "cudnn", phase));
    EXPECT_EQ(attention_ns("A100-80GB", "flash", phase), attention_ns("A100-80GB", "cudnn", phase));
  }
  // The key is torchtitan's.
  EXPECT_NE(test::job_error(llama_yaml("sdpa_backend: flash")).find("training.sdpa_backend: is the backend of PyTorch"),
            std::string::npos);
}

// validate reads the PyTorch release a torchtitan row's notes name: the B200 rows ran 2.9.0.dev20250815.
TEST(FrameworkTorchtitan, ValidateRunsSdpaFlashForPyTorchBefore2_11) {
  const auto runs = validate::read_published_runs(test::published_runs("published_runs_blackwell.csv"));
  int seen = 0;
  for (const auto& r : runs) {
    if (r.framework != "torchtitan") continue;
    const validate::RunJob rj = validate::job_for_run(catalog::shipped().gpus, r);
    EXPECT_EQ(rj.root["training"]["sdpa_backend"].as<std::string>(), "flash") << r.id;
    ++seen;
  }
  EXPECT_EQ(seen, 4);
}

}  // namespace
}  // namespace stepsim
