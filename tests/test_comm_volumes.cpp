// Per-rank communication volumes against the closed forms of the NCCL Trace Profiler thesis §2.4,
// computed here from the job's numbers, not from stepsim's own code. Volumes follow the summary
// contract: message size S times the nccl-tests bus factor; sends only for pipeline p2p.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stepsim/report/breakdown.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

using report::CommBytes;

// The gradient norm (one fp32) all-reduced over a group of n before the optimizer: bus volume 2 (n-1)/n * 4 bytes.
double norm_volume(int64_t n) { return 2.0 * (n - 1) / n * 4; }

CommBytes bytes_for_rank(const spec::JobSpec& job, int rank) {
  const workload::Workload w = workload::build_megatron_workload(job);
  return report::comm_bytes(w, rank);
}

// GPT layer with biases and LayerNorm: the job used by every test here.
std::string gpt(int layers, int h, int heads, int vocab, int seq, const std::string& par, int gpus, int gbs,
                const std::string& train = "", const std::string& model_extra = "") {
  return "model: {name: gpt, num_layers: " + std::to_string(layers) + ", hidden_size: " + std::to_string(h) +
         ", num_attention_heads: " + std::to_string(heads) + ", ffn_hidden_size: " + std::to_string(4 * h) +
         ", vocab_size: " + std::to_string(vocab) + ", seq_length: " + std::to_string(seq) + model_extra + "}\n" +
         "parallelism: {" + par + "}\ntraining: {micro_batch_size: 1, global_batch_size: " + std::to_string(gbs) + train +
         "}\ncluster: {gpu: H100-SXM, num_gpus: " + std::to_string(gpus) +
         ", gpus_per_node: 4, intra_node: {bandwidth_GBps: 450}, inter_node: {bandwidth_Gbps: 400}}\n";
}

// Eq. 2.6 with eq. 2.4: V_DP = 2 (n_DP - 1)/n_DP * P * beta for TP = PP = 1, where P is eq. 2.4's count
// (learned positions, biases, two LayerNorms per layer, tied embeddings) plus the final LayerNorm (2h),
// which eq. 2.4 leaves out. beta = 4: Megatron reduces bf16 training's gradients in fp32.
TEST(CommVolume, DataParallelMatchesEq2_6) {
  const int64_t l = 4, h = 512, V = 32000, s = 1024, d = 4;  // V is a multiple of 128: no vocabulary padding
  const spec::JobSpec job = test::job_from_yaml(gpt(l, h, 8, V, s, "data: 4", 4, 8, "", ", tie_embeddings: true"));
  const double P = 12.0 * l * h * h * (1 + 13.0 / (12 * h) + double(V + s) / (12.0 * l * h)) + 2 * h;
  const double expected = 2.0 * (d - 1) / d * P * 4;
  const CommBytes c = bytes_for_rank(job, 0);
  EXPECT_NEAR(double(c.volume[report::kDp]), expected, 2.0);
  EXPECT_NEAR(double(c.message[report::kDp]), P * 4, 0.5);  // all-reduce message = the gradient buffer
}

// Eq. 2.6 generalised: with TP and PP, a middle stage holds L_stage layers of 12h^2/t + 7h/t + 6h
// parameters (biases of row-parallel layers and the LayerNorms are replicated across TP).
TEST(CommVolume, DataParallelOnAMiddleStageWithTpAndPp) {
  const int64_t h = 512, t = 2, p = 4, d = 4, L = 16, Ls = L / p;
  const spec::JobSpec job = test::job_from_yaml(gpt(L, h, 8, 32000, 1024, "tensor: 2, pipeline: 4, data: 4", 32, 16,
                                                     ", distributed_optimizer: true"));
  const double P_local = Ls * (12.0 * h * h / t + 7.0 * h / t + 6.0 * h);
  // Distributed optimizer: reduce-scatter of fp32 gradients + all-gather of bf16 parameters, each (d-1)/d; and the
  // gradient norm, one fp32 all-reduced over DP (the sharded gradients): 2 (d-1)/d * 4 bytes.
  const double expected = (d - 1.0) / d * P_local * (4 + 2) + norm_volume(d);
  const int rank_in_stage_1 = int(t * d);  // tp 0, dp 0, pp 1
  const CommBytes c = bytes_for_rank(job, rank_in_stage_1);
  EXPECT_NEAR(double(c.volume[report::kDp]), expected, 4.0);
  (void)p;
}

// DeepSpeed's pipeline engine with ZeRO-1 (training.zero1_grad_reduce: all_reduce): the fp32 gradients all-reduced,
// 2 (d-1)/d, then the bf16 parameters all-gathered, (d-1)/d: one all-gather's worth of fp32 gradients more than
// Megatron's reduce-scatter.
TEST(CommVolume, DeepSpeedZero1AllReducesTheGradients) {
  const int64_t h = 512, t = 2, p = 4, d = 4, L = 16, Ls = L / p;
  const spec::JobSpec job = test::job_from_yaml(gpt(L, h, 8, 32000, 1024, "tensor: 2, pipeline: 4, data: 4", 32, 16,
                                                     ", distributed_optimizer: true, zero1_grad_reduce: all_reduce"));
  const double P_local = Ls * (12.0 * h * h / t + 7.0 * h / t + 6.0 * h);
  const double expected = (d - 1.0) / d * P_local * (2 * 4 + 2) + norm_volume(d);
  const CommBytes c = bytes_for_rank(job, int(t * d));
  EXPECT_NEAR(double(c.volume[report::kDp]), expected, 4.0);
  (void)p;
  // Only with the distributed optimizer at ZeRO stage 1.
  const std::string err = test::job_error(gpt(L, h, 8, 32000, 1024, "tensor: 2, pipeline: 4, data: 4", 32, 16,
                                              ", zero1_grad_reduce: all_reduce"));
  EXPECT_NE(err.find("training.zero1_grad_reduce"), std::string::npos) << err;
}

// Eq. 2.7: V_TP = L_stage * 8 b s h (n_TP - 1)/n_TP * beta per micro-batch (four all-reduces of b s h per
// layer, two forward and two backward), without sequence parallelism.
TEST(CommVolume, TensorParallelMatchesEq2_7) {
  const int64_t h = 1024, s = 2048, b = 1, t = 4, L = 12, p = 3, m = 6, beta = 2;
  const spec::JobSpec job = test::job_from_yaml(gpt(L, h, 16, 32000, s, "tensor: 4, pipeline: 3, data: 1", 12, m));
  const double expected = m * (L / p) * 8.0 * b * s * h * (t - 1.0) / t * beta + norm_volume(t);
  const CommBytes c = bytes_for_rank(job, int(t));  // middle stage: transformer layers only
  EXPECT_NEAR(double(c.volume[report::kTp]), expected, 1.0);
  EXPECT_EQ(c.calls[report::kTp], uint64_t(m * (L / p) * 4 + 1));
}

// With sequence parallelism Megatron replaces each all-reduce by reduce-scatter + all-gather (same bus
// volume) and all-gathers the sharded input once more in backward for the weight gradients of the two
// column-parallel GEMMs: 10 b s h (t-1)/t per layer instead of 8, plus one all-reduce of the gradients
// of TP-replicated parameters.
TEST(CommVolume, TensorParallelWithSequenceParallelism) {
  const int64_t h = 1024, s = 2048, t = 4, L = 12, p = 3, m = 6, beta = 2;
  const spec::JobSpec job = test::job_from_yaml(
      gpt(L, h, 16, 32000, s, "tensor: 4, pipeline: 3, data: 1, sequence_parallel: true", 12, m));
  const double layers = m * (L / p) * 10.0 * s * h * (t - 1.0) / t * beta;
  // Gradients of the parameters replicated over TP under SP (Megatron's sequence_parallel-marked ones:
  // two LayerNorms (gamma, beta) = 4h and the row-parallel biases of the attention projection and fc2 = 2h
  // per layer) are all-reduced over TP once per step, in fp32.
  const double sp_grads = 2.0 * (t - 1) / t * (L / p) * 6.0 * h * 4;
  const CommBytes c = bytes_for_rank(job, int(t));
  EXPECT_NEAR(double(c.volume[report::kTp]), layers + sp_grads + norm_volume(t), 2.0);
}

// Eq. 2.9: V_PP,TP = b s h / n_TP * beta per micro-batch and direction; a middle stage sends every
// micro-batch's activations forward and its gradients backward (receives count 0).
TEST(CommVolume, PipelineMatchesEq2_9) {
  const int64_t h = 1024, s = 2048, b = 1, t = 4, m = 8, beta = 2;
  const spec::JobSpec job = test::job_from_yaml(
      gpt(12, h, 16, 32000, s, "tensor: 4, pipeline: 3, data: 1, sequence_parallel: true", 12, m));
  const double per_mb = double(b * s * h / t * beta);
  const double norm = norm_volume(3);  // and every stage all-reduces the gradient norm over the pipeline
  const CommBytes mid = bytes_for_rank(job, int(t));
  EXPECT_NEAR(double(mid.volume[report::kPp]), 2 * m * per_mb + norm, 0.5);
  EXPECT_NEAR(double(bytes_for_rank(job, 0).volume[report::kPp]), m * per_mb + norm, 0.5);  // first: forward only
  EXPECT_NEAR(double(bytes_for_rank(job, int(2 * t)).volume[report::kPp]), m * per_mb + norm, 0.5);  // last: backward
}

// Eq. 2.11: V_EP = 4 B S k h (1 - 1/n_EP) per MoE layer (dispatch and combine, forward and backward),
// B = all micro-batches of the step, beta bytes per element.
TEST(CommVolume, ExpertParallelMatchesEq2_11) {
  const int64_t h = 1024, S = 1024, k = 2, e = 4, L = 4, m = 4, beta = 2;
  const spec::JobSpec job = test::job_from_yaml(
      gpt(L, h, 16, 32000, S, "data: 4, expert: 4", 4, 16, "", ", moe: {num_experts: 8, topk: 2, ffn_hidden_size: 2048}"));
  const double expected = L * 4.0 * (m * 1) * S * k * h * (1.0 - 1.0 / e) * beta;
  // Besides Eq. 2.11's tokens, the alltoall dispatcher all-gathers each rank's tokens-per-expert counts (8 experts x
  // 8 B per rank, 4 ranks) once per layer forward: 256 B x 3/4 of bus volume.
  const double counts = L * m * (8.0 * 8 * e) * (1.0 - 1.0 / e);
  const CommBytes c = bytes_for_rank(job, 0);
  EXPECT_NEAR(double(c.volume[report::kEp]), expected + counts, 1.0);
  EXPECT_EQ(c.calls[report::kEp], uint64_t(4 * L * m + L * m));
}

// The summary JSON reports the same numbers for the rank asked for.
TEST(CommVolume, SummaryJsonCarriesThem) {
  const std::string path = test::write_temp(
      "volumes.yaml", gpt(12, 1024, 16, 32000, 2048, "tensor: 4, pipeline: 3, data: 1", 12, 6));
  const std::string out = stepsim::test::temp_dir() + "volumes.json";
  const auto r = test::run_cli("simulate " + path + " --rank 4 --quiet --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(test::read_file(out));
  EXPECT_EQ(j["rank"], 4);
  const double expected_tp = 6 * 4 * 8.0 * 2048 * 1024 * 3.0 / 4 * 2 + norm_volume(4);
  EXPECT_NEAR(j["comm_volume_bytes_per_rank"]["tp"].get<double>(), expected_tp, 1.0);
  EXPECT_EQ(j["comm_message_bytes_per_rank"]["tp"].get<double>(), 6 * 4 * 4 * 2048.0 * 1024 * 2 + 4);
  EXPECT_NEAR(j["comm_volume_bytes_per_rank"]["pp"].get<double>(), 2 * 6 * 2048.0 * 1024 * 2 + norm_volume(3), 0.5);
}

}  // namespace
}  // namespace stepsim
