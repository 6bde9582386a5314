// Memory against closed forms computed here: static memory = MoFa eq. 4 / Megatron's distributed-
// optimizer table; stored activations per layer = 34 s b h / t (Korthikanti et al. 2022 with flash
// attention, sequence parallel) plus softmax statistics; in-flight micro-batches = p - r for 1F1B and
// v p + p - 2r - 1 for interleaved 1F1B (MoFa eq. 5); the engine's peak equals the analytic one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stepsim/report/memory_report.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/static_memory.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

constexpr int64_t h = 1024, s = 2048, heads = 16;

std::string job(int t, int p, int d, int layers, int gbs, const std::string& par = "", const std::string& train = "") {
  return "model: {name: gpt, num_layers: " + std::to_string(layers) + ", hidden_size: 1024, num_attention_heads: 16,"
         " ffn_hidden_size: 4096, vocab_size: 32000, seq_length: 2048}\n"
         "parallelism: {tensor: " + std::to_string(t) + ", pipeline: " + std::to_string(p) + ", data: " + std::to_string(d) + par + "}\n"
         "training: {micro_batch_size: 1, global_batch_size: " + std::to_string(gbs) + train + "}\n"
         "cluster: {gpu: H100-SXM, num_gpus: " + std::to_string(t * p * d) +
         ", gpus_per_node: 4, intra_node: {bandwidth_GBps: 450}, inter_node: {bandwidth_Gbps: 400}}\n";
}

// Parameters of one GPT layer on one TP rank: 12h^2/t + 7h/t + 6h.
double layer_params(int t) { return 12.0 * h * h / t + 7.0 * h / t + 6.0 * h; }

int64_t overhead(const workload::Workload& w) {
  // tp, cp, ep, pp, dp, edp: one communicator per dimension of more than one rank
  int comms = 0;
  for (int n : {w.layout.tensor(), w.layout.context(), w.layout.expert(), w.layout.pipeline(),
                w.layout.context() * w.layout.data(),
                w.layout.world() / w.layout.pipeline() / (w.layout.expert_tensor() * w.layout.expert())})
    comms += n > 1;
  return workload::kCudaContextBytes + comms * workload::kNcclBytesPerCommunicator;
}

// MoFa eq. 4: D_para P + D_grad P + 4 D_opt P, with D_opt = 3 fp32 optimizer tensors (master, m, v). Megatron's
// docs/distrib_optimizer table counts with 16-bit gradients also the step's fp32 gradient copy (20 = 16 + 4, 4 + 16/d
// = (4 + 12/d) + 4/d): Megatron creates it in the step and drops it at the next zero_grad, so it is held by the
// optimizer op (in the peak only if the step's memory exceeds the activation peak), not static memory.
TEST(Memory, StaticMemoryMatchesMoFaEq4AndMegatronTable) {
  const int t = 2, p = 4, d = 4, L = 16;
  struct Case {
    std::string train;
    double bytes_per_param;  // static part of Megatron docs/distrib_optimizer table
    double step_copy;        // per parameter of the optimizer shard, while optimizer_step runs
  } cases[] = {
      {"", 2 + 4 + 4 * 3, 0},                                              // bf16, fp32 grads: 18
      {", distributed_optimizer: true", 6 + 12.0 / d, 0},                  // 6 + 12/d
      {", precision: fp32", 16, 0},                                        // 16
      {", precision: fp32, distributed_optimizer: true", 8 + 8.0 / d, 0},  // 8 + 8/d
      {", precision: fp16", 16, 4},                                        // 20 = 16 + 4
      {", precision: fp16, distributed_optimizer: true", 4 + 12.0 / d, 4}, // 4 + 16/d
      // Precision-aware optimizer (Megatron --use-precision-aware-optimizer): bf16 moments; fp16 master + fp8 moments.
      {", distributed_optimizer: true, precision_aware_optimizer: true, exp_avg_dtype: bf16, exp_avg_sq_dtype: bf16",
       6 + 8.0 / d, 0},
      {", distributed_optimizer: true, precision_aware_optimizer: true, main_params_dtype: fp16, exp_avg_dtype: fp8, "
       "exp_avg_sq_dtype: fp8, grad_reduce_in_fp32: false",
       4 + 4.0 / d, 0},  // bf16 gradients read as they are: no fp32 copy
      {", distributed_optimizer: true, grad_reduce_in_fp32: false", 4 + 12.0 / d, 4},
      // Apex's DistributedFusedAdam with NeMo's optim.dtype: bf16: master weights and moments in bf16, bf16 gradients.
      {", distributed_optimizer: true, precision_aware_optimizer: true, main_params_dtype: bf16, exp_avg_dtype: bf16, "
       "exp_avg_sq_dtype: bf16, grad_reduce_in_fp32: false",
       4 + 6.0 / d, 0},
  };
  for (const Case& c : cases) {
    const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(job(t, p, d, L, 16, "", c.train)));
    const auto& mid = w.programs[1];  // a middle stage: transformer layers only
    const double P = (L / p) * layer_params(t);
    EXPECT_EQ(double(mid.dense_parameters), P) << c.train;
    EXPECT_NEAR(double(mid.static_memory.total() - mid.static_memory.allocator_reserve - overhead(w)), P * c.bytes_per_param, 2.0) << c.train;
    const bool dist = c.train.find("distributed_optimizer") != std::string::npos;
    for (const auto& op : mid.ops) {
      if (mid.name(op) != "optimizer_step") continue;
      EXPECT_NEAR(double(op.mem_alloc_at_start), P / (dist ? d : 1) * c.step_copy, 2.0) << c.train;
    }
  }
}

TEST(Memory, OptimizerDtypesNeedThePrecisionAwareOptimizer) {
  const std::string base = job(2, 4, 4, 16, 16, "", ", distributed_optimizer: true, exp_avg_dtype: bf16");
  EXPECT_NE(test::job_error(base).find("training.precision_aware_optimizer: must be true"), std::string::npos);
  const std::string no_dist = job(2, 4, 4, 16, 16, "", ", precision_aware_optimizer: true");
  EXPECT_NE(test::job_error(no_dist).find("training.precision_aware_optimizer: needs distributed_optimizer"),
            std::string::npos);
  const std::string bad = job(2, 4, 4, 16, 16, "", ", main_params_dtype: fp8");
  EXPECT_NE(test::job_error(bad).find("training.main_params_dtype"), std::string::npos);
}

// Stored activations of one layer and micro-batch with TP + sequence parallelism and flash attention.
double layer_activation(int t) { return 34.0 * s * h / t + 4.0 * (heads / t) * s; }

TEST(Memory, OneFOneBActivationsFollowTheSchedule) {
  const int t = 2, p = 4, d = 1, L = 16, m = 8;
  const auto sim = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(job(t, p, d, L, m, ", sequence_parallel: true")), {});
  const auto& w = sim.workload;
  for (int r = 1; r < p - 1; ++r) {  // middle stages: no embedding, no head
    const double expected = (p - r) * (L / p) * layer_activation(t);
    const auto& prog = w.programs[r];
    EXPECT_NEAR(double(prog.stored_activation_peak), expected, 1.0) << "stage " << r;
    const int rank = r * t;
    EXPECT_EQ(sim.result.peak_bytes[rank], prog.static_memory.total() + prog.activation_peak) << "stage " << r;
  }
}

TEST(Memory, InterleavedActivationsFollowMoFaEq5) {
  const int t = 2, p = 4, v = 2, L = 16, m = 8;  // 2 layers per model chunk
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(
      job(t, p, 1, L, m, ", sequence_parallel: true, virtual_stages: 2, schedule: interleaved-1f1b")));
  for (int r = 1; r < p - 1; ++r) {
    const int in_flight = std::min(v * p + p - 2 * r - 1, m * v);
    const double expected = in_flight * (L / (p * v)) * layer_activation(t);
    EXPECT_NEAR(double(w.programs[r].stored_activation_peak), expected, 1.0) << "stage " << r;
  }
}

// fp8 as Transformer Engine runs it: a linear layer keeps its input for the weight gradient as the fp8 copy it cast
// (1 byte per element). Per layer under SP: the QKV and FC1 inputs 2 -> 1 byte x s h / t each, the FC2 input 2 -> 1
// x s ffn / t; the attention output O stays in bf16 for the attention core's backward and the projection adds its
// fp8 copy (+1 x s h / t). Net: -(h + ffn) s / t = -5 s h / t per layer (ffn 4h), from 34 to 29 s h / t.
TEST(Memory, Fp8StoresLinearInputsAsFp8Copies) {
  const int t = 2, p = 4, L = 16, m = 8;
  const auto peak = [&](const std::string& precision) {
    const workload::Workload w = workload::build_megatron_workload(
        test::job_from_yaml(job(t, p, 1, L, m, ", sequence_parallel: true", ", precision: " + precision)));
    return w.programs;
  };
  const auto bf16 = peak("bf16"), fp8 = peak("fp8");
  for (int r = 1; r < p - 1; ++r) {
    const double layers = (p - r) * (L / p);
    EXPECT_NEAR(double(bf16[r].stored_activation_peak), layers * layer_activation(t), 1.0) << "stage " << r;
    EXPECT_NEAR(double(fp8[r].stored_activation_peak), layers * (layer_activation(t) - 5.0 * s * h / t), 1.0) << "stage " << r;
  }
}

// Residual dropout stores a 1-byte mask per element at both bias-dropout-adds (2 s h / t per layer under SP); with
// hidden_dropout 0 (gated-MLP models' default, Megatron's --hidden-dropout 0) PyTorch stores none: 32 s h / t.
TEST(Memory, ResidualDropoutMasksOnlyWithDropout) {
  const int t = 2, p = 4, L = 16, m = 8, r = 1;
  // GELU models keep Megatron's default 0.1 (the other Memory tests' 34 s h / t counts its masks).
  EXPECT_EQ(test::job_from_yaml(job(t, p, 1, L, m)).model.hidden_dropout, 0.1);
  std::string y = job(t, p, 1, L, m, ", sequence_parallel: true");
  y.replace(y.find("seq_length: 2048}"), 17, "seq_length: 2048, hidden_dropout: 0}");
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(y));
  EXPECT_NEAR(double(w.programs[r].stored_activation_peak), (p - r) * (L / p) * (layer_activation(t) - 2.0 * s * h / t), 1.0);
  // The loader's default follows the activation: SwiGLU models train without dropout.
  std::string g = job(t, p, 1, L, m);
  g.replace(g.find("seq_length: 2048}"), 17, "seq_length: 2048, activation: swiglu}");
  EXPECT_EQ(test::job_from_yaml(g).model.hidden_dropout, 0.0);
  std::string bad = job(t, p, 1, L, m);
  bad.replace(bad.find("seq_length: 2048}"), 17, "seq_length: 2048, hidden_dropout: 1.5}");
  EXPECT_NE(test::job_error(bad).find("model.hidden_dropout"), std::string::npos) << test::job_error(bad);
}

// Without sequence parallelism LayerNorm inputs, dropout masks and the QKV/FC1 inputs are replicated:
// s b h (10 + 24/t) (Korthikanti et al., Table 2 with flash attention).
TEST(Memory, ActivationsWithoutSequenceParallelism) {
  const int t = 4, p = 3, L = 6, m = 6;
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(job(t, p, 1, L, m)));
  const double per_layer = s * h * (10.0 + 24.0 / t) + 4.0 * (heads / t) * s;
  EXPECT_NEAR(double(w.programs[1].stored_activation_peak), (p - 1) * (L / p) * per_layer, 1.0);
}

// Full recompute stores only each layer's input (2 s b h / t under SP) and re-creates one layer's
// activations during its backward.
TEST(Memory, FullRecomputeStoresLayerInputs) {
  const int t = 2, p = 4, L = 16, m = 8, r = 1;
  const workload::Workload w = workload::build_megatron_workload(
      test::job_from_yaml(job(t, p, 1, L, m, ", sequence_parallel: true", ", recompute: full")));
  const double ckpt = 2.0 * s * h / t;
  const double expected = (p - r) * (L / p) * ckpt + layer_activation(t);
  EXPECT_NEAR(double(w.programs[r].stored_activation_peak), expected, 1.0);
}

TEST(Memory, MemoryCommandAgreesWithTheEngineAndFlagsOom) {
  const std::string path = test::write_temp("mem.yaml", job(2, 4, 1, 16, 8, ", sequence_parallel: true"));
  const std::string out = stepsim::test::temp_dir() + "mem.json";
  const auto r = test::run_cli("memory " + path + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("GiB"), std::string::npos) << r.output;
  const auto mem = nlohmann::json::parse(test::read_file(out));
  const auto sim = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(job(2, 4, 1, 16, 8, ", sequence_parallel: true")), {});
  for (const auto& st : mem["per_stage"]) {
    const int stage = st["stage"];
    EXPECT_EQ(st["peak_bytes"].get<int64_t>(), sim.result.peak_bytes[stage * 2]) << "stage " << stage;
  }
  EXPECT_FALSE(mem["oom"].get<bool>());
  // GPT-3 175B on 8 GPUs cannot fit.
  const auto big = test::run_cli("memory " + test::source_dir() + "/examples/gpt3-175b-h800.yaml --set cluster.num_gpus=8 "
                                 "--set parallelism.pipeline=1");
  EXPECT_EQ(big.code, 0) << big.output;
  EXPECT_NE(big.output.find("OOM"), std::string::npos) << big.output;
}

}  // namespace
}  // namespace stepsim
