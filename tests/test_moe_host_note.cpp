// The host-bound MoE note (docs/COST-MODELS.md, "Host-bound MoE layers"): printed when a dropless MoE layer's forward
// gives the GPU less work than the measured host time of an eager Megatron-Core MoE layer forward, never under CUDA
// graphs or with capacity-padded (static) buffers, and it changes no number.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/moe_host_note.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

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
  const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(qwen3_layer_job()), {0});
  ASSERT_EQ(s.notes.size(), 1u);
  const std::string& n = s.notes[0];
  EXPECT_NE(n.find("host-bound"), std::string::npos) << n;
  // The GPU work per layer forward it quotes: stepsim's forward kernels of the 4 MoE layers over 4 forwards (the
  // dispatcher's synchronisation is host time, not GPU work). The measured GPU busy time of this layer's forward is
  // 1.92 ms (megatron_host.csv, 4k grouped: 7,693.7 us / 4); the model gives 1.84 ms, and the note says so to two
  // decimals, with the host time at the shipped host speed (0.65 x 5.8035 = 3.77 ms).
  EXPECT_NE(n.find("MoE layers: 1.84 ms of GPU work per layer forward"), std::string::npos) << n;
  EXPECT_NE(n.find("against 3.77 ms of host time (the 5.8 ms an eager Megatron-Core MoE layer forward took"),
            std::string::npos) << n;
  // No note under CUDA graphs (no eager issue) or with capacity-padded buffers (no per-layer host synchronisation).
  EXPECT_TRUE(sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(qwen3_layer_job(", cuda_graphs: true")), {0}).notes.empty());
  EXPECT_TRUE(
      sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(qwen3_layer_job("", ", capacity_factor: 1.0, pad_to_capacity: true")), {0})
          .notes.empty());
  // Experts 8x wider at top-1 (the same routed rows, 8x the GEMM work per row): above the host's time, no note.
  std::string wide = qwen3_layer_job();
  wide.replace(wide.find("topk: 8, ffn_hidden_size: 768"), std::string("topk: 8, ffn_hidden_size: 768").size(),
               "topk: 8, ffn_hidden_size: 6144");
  EXPECT_TRUE(sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(wide), {0}).notes.empty());
  // A dense model never gets it.
  EXPECT_TRUE(sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(test::small_gpt_yaml(1, 1, 8, 8)), {0}).notes.empty());
}

TEST(MoeHostNote, TheNoteChangesNoNumber) {
  const spec::JobSpec j = test::job_from_yaml(qwen3_layer_job());
  const sim::Simulation with = sim::run_simulation(stepsim::catalog::shipped(), j, {0});
  const workload::Workload w = sim::timed_workload(stepsim::catalog::shipped(), j);
  EXPECT_TRUE(sim::host_bound_moe(w, sim::host_time_scale(stepsim::catalog::shipped(), j)).has_value());
  const sim::Simulation again = sim::run_workload(stepsim::catalog::shipped(), sim::timed_workload(stepsim::catalog::shipped(), j), {0});
  EXPECT_EQ(with.result.step_ns, again.result.step_ns);
}

// The host-bound wait, by hand on a stage of 2 MoE layers and 2 micro-batches whose every forward is 1 ms of GPU work
// and every backward 2 ms (H_f = 5,803.5 us and H_b = (43,331.1 - 23,214) / 4 = 5,029.275 us, megatron_host.csv):
// each forward waits 5.8035 - 1 = 4.8035 ms, 4 forwards 19.214 ms; each micro-batch's backward (one chunk of both
// layers, no synchronisation) 2 x 5.029275 - 2 x 2 = 6.05855 ms, twice 12.1171 ms; 31.3311 ms in all. Recomputing both
// layers of micro-batch 1 (1 ms each) costs the host 2 x 5.8035 ms more and the GPU 2 ms more: +9.607 ms.
TEST(MoeHostNote, HostBoundWaitByHandOnASyntheticStage) {
  EXPECT_DOUBLE_EQ(sim::kMoeLayerBackwardHostUs, 5029.275);
  auto stage = [](bool recompute) {
    workload::Workload w;
    w.job.model.moe = spec::MoeSpec{};
    w.job.model.moe->num_experts = 8;
    workload::Program p;
    p.names = {"layer", "moe_host_sync"};
    auto add = [&](workload::Phase phase, int mb, int layer, int64_t ns, uint16_t name = 0) {
      workload::Op op;
      op.phase = phase;
      op.microbatch = mb;
      op.layer = static_cast<int16_t>(layer);
      op.duration_ns = ns;
      op.name = name;
      p.ops.push_back(op);
    };
    for (int mb = 0; mb < 2; ++mb) {
      for (int l = 0; l < 2; ++l) {
        add(workload::Phase::Forward, mb, l, 600'000);
        add(workload::Phase::Forward, mb, l, 0, 1);  // the dispatcher's synchronisation marks the layer as MoE
        p.ops.back().host_sync = true;
        add(workload::Phase::Forward, mb, l, 400'000);
      }
    }
    for (int mb = 0; mb < 2; ++mb) {
      for (int l = 1; l >= 0; --l) {
        if (recompute && mb == 1) add(workload::Phase::Recompute, mb, l, 1'000'000);
        add(workload::Phase::Backward, mb, l, 2'000'000);
      }
    }
    // A non-MoE op (the output layer) counts for nothing.
    add(workload::Phase::Forward, 0, -1, 9'000'000);
    w.programs.push_back(p);
    return sim::host_bound_moe(w, 0.0);
  };
  const auto plain = stage(false);
  ASSERT_TRUE(plain.has_value());
  EXPECT_DOUBLE_EQ(plain->gpu_us_per_layer_forward, 1000.0);
  EXPECT_NEAR(plain->extra_s, 31.3311e-3, 1e-9);
  const auto recomputed = stage(true);
  ASSERT_TRUE(recomputed.has_value());
  EXPECT_NEAR(recomputed->extra_s, 31.3311e-3 + 2 * 5.8035e-3 - 2e-3, 1e-9);
  EXPECT_NE(sim::host_bound_moe_note(*plain).find("by up to 0.031 s"), std::string::npos) << sim::host_bound_moe_note(*plain);
}

// The summary keeps the GPU-bound step time and widens the interval's upper end to the host-bound step, in text and
// JSON; CUDA graphs take the widening away with the note.
TEST(MoeHostNote, TheIntervalReachesTheHostBoundStep) {
  const spec::JobSpec j = test::job_from_yaml(qwen3_layer_job());
  const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), j, {0});
  const auto h = sim::host_bound_moe(sim::timed_workload(stepsim::catalog::shipped(), j), sim::host_time_scale(stepsim::catalog::shipped(), j));
  ASSERT_TRUE(h.has_value());
  EXPECT_DOUBLE_EQ(s.host_bound_extra_s, h->extra_s);
  EXPECT_GT(h->extra_s, 0.0);
  const report::Summary sum = report::summarize(s, 0);
  EXPECT_DOUBLE_EQ(sum.step_time_s, static_cast<double>(s.result.step_ns) * 1e-9);
  EXPECT_DOUBLE_EQ(sum.step_time_host_bound_s, sum.step_time_s + h->extra_s);
  ASSERT_TRUE(sum.step_time_interval_s.has_value());
  EXPECT_DOUBLE_EQ((*sum.step_time_interval_s)[1], sum.step_time_host_bound_s);
  EXPECT_LT((*sum.step_time_interval_s)[0], sum.step_time_s);
  const std::string text = report::to_text(sum, j);
  EXPECT_NE(text.find("upper end at least the host-bound step, " + report::format_seconds(sum.step_time_host_bound_s)),
            std::string::npos)
      << text;
  EXPECT_DOUBLE_EQ(report::to_json(sum, j)["step_time_host_bound_s"].get<double>(), sum.step_time_host_bound_s);
  const spec::JobSpec graphs = test::job_from_yaml(qwen3_layer_job(", cuda_graphs: true"));
  const report::Summary g = report::summarize(sim::run_simulation(stepsim::catalog::shipped(), graphs, {0}), 0);
  EXPECT_EQ(g.step_time_host_bound_s, 0.0);
  EXPECT_FALSE(report::to_json(g, graphs).contains("step_time_host_bound_s"));
}

}  // namespace
}  // namespace stepsim
