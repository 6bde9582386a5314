// The host-bound MoE note (docs/COST-MODELS.md, "Host-bound MoE layers"): printed when a dropless MoE layer's forward
// gives the GPU less work than the measured host time of an eager Megatron-Core MoE layer forward, never under CUDA
// graphs or with capacity-padded (static) buffers, and it changes no number.
#include <gtest/gtest.h>

#include "stepsim/sim/moe_host_note.hpp"
#include "stepsim/sim/simulation.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

// Qwen3-30B-A3B's layer shape on 8 H100s with EP 8 (the measured case: one EP-8 rank's share), 4K tokens, bf16.
std::string qwen3_layer_job(const std::string& training_extra = "", const std::string& moe_extra = "") {
  return "model: {name: q, num_layers: 4, hidden_size: 2048, num_attention_heads: 32, num_query_groups: 4,"
         " kv_channels: 128, ffn_hidden_size: 6144, activation: swiglu, normalization: rmsnorm, add_bias_linear: false,"
         " position_embedding: rope, tie_embeddings: false, vocab_size: 1024, seq_length: 4096,"
         " moe: {num_experts: 128, topk: 8, ffn_hidden_size: 768" + moe_extra + "}}\n"
         "parallelism: {data: 8, expert: 8}\n"
         "training: {micro_batch_size: 1, global_batch_size: 8, precision: bf16" + training_extra + "}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\nsimulation: {calibration_store: none}\n";
}

TEST(MoeHostNote, SmallExpertLayersWarnLargeOnesDoNot) {
  // The host reference is the measured file's 23,214 us over 4 layers.
  EXPECT_DOUBLE_EQ(sim::kMoeLayerForwardHostUs, 5803.5);
  const sim::Simulation s = sim::run_simulation(test::job_from_yaml(qwen3_layer_job()), {0});
  ASSERT_EQ(s.notes.size(), 1u);
  const std::string& n = s.notes[0];
  EXPECT_NE(n.find("host-bound"), std::string::npos) << n;
  // The GPU work per layer forward it quotes: stepsim's forward kernels of the 4 MoE layers over 4 forwards. The
  // measured GPU busy time of this layer's forward is 1.92 ms (megatron_host.csv, 4k grouped: 7,693.7 us / 4); the
  // model gives 1.94 ms, and the note says so to two decimals.
  EXPECT_NE(n.find("MoE layers: 1.94 ms of GPU work per layer forward"), std::string::npos) << n;
  EXPECT_NE(n.find("below the 5.8 ms of host time"), std::string::npos) << n;
  // No note under CUDA graphs (no eager issue) or with capacity-padded buffers (no per-layer host synchronisation).
  EXPECT_TRUE(sim::run_simulation(test::job_from_yaml(qwen3_layer_job(", cuda_graphs: true")), {0}).notes.empty());
  EXPECT_TRUE(
      sim::run_simulation(test::job_from_yaml(qwen3_layer_job("", ", capacity_factor: 1.0, pad_to_capacity: true")), {0})
          .notes.empty());
  // Experts 8x wider at top-1 (the same routed rows, 8x the GEMM work per row): above the host's time, no note.
  std::string wide = qwen3_layer_job();
  wide.replace(wide.find("topk: 8, ffn_hidden_size: 768"), std::string("topk: 8, ffn_hidden_size: 768").size(),
               "topk: 8, ffn_hidden_size: 6144");
  EXPECT_TRUE(sim::run_simulation(test::job_from_yaml(wide), {0}).notes.empty());
  // A dense model never gets it.
  EXPECT_TRUE(sim::run_simulation(test::job_from_yaml(test::small_gpt_yaml(1, 1, 8, 8)), {0}).notes.empty());
}

TEST(MoeHostNote, TheNoteChangesNoNumber) {
  const spec::JobSpec j = test::job_from_yaml(qwen3_layer_job());
  const sim::Simulation with = sim::run_simulation(j, {0});
  const workload::Workload w = sim::timed_workload(j);
  EXPECT_TRUE(sim::host_bound_moe_note(w).has_value());
  const sim::Simulation again = sim::run_workload(sim::timed_workload(j), {0});
  EXPECT_EQ(with.result.step_ns, again.result.step_ns);
}

}  // namespace
}  // namespace stepsim
