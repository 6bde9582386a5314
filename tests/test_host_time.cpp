// Host-side time in a simulated step (issue 13 item 2): the eager launch gap before every kernel (data/efficiency.yaml
// launch_gap_us, dropped under training.cuda_graphs) and the MoE dispatchers' host synchronisation once per forward.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "stepsim/catalog/efficiency_table.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/report/breakdown.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/input/megatron_args.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using workload::ComputeCategory;
using workload::OpKind;

// One GPU, so every op is on the compute stream and the step is their sum: CUDA graphs save exactly one launch gap per
// kernel (every compute op but host-side copies and the CPU optimizer).
TEST(HostTime, CudaGraphsSaveOneLaunchGapPerKernel) {
  const std::string eager_yaml = test::small_gpt_yaml(1, 1, 1, 4);
  const std::string graph_yaml = test::small_gpt_yaml(1, 1, 1, 4, "", ", cuda_graphs: true");
  const auto eager = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(eager_yaml), {0});
  const auto graphed = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(graph_yaml), {0});
  int64_t kernels = 0;
  for (const auto& op : eager.workload.programs[0].ops)
    if (op.kind == OpKind::Compute && op.category != ComputeCategory::Host && op.category != ComputeCategory::Offload &&
        op.category != ComputeCategory::CpuOptimizer)
      ++kernels;
  ASSERT_GT(kernels, 100);
  const double gap_ns =
      test::shipped_efficiency("H100-SXM").launch_gap_us * 1e3;
  EXPECT_EQ(eager.result.step_ns - graphed.result.step_ns, kernels * static_cast<int64_t>(gap_ns));
}

TEST(HostTime, MegatronCudaGraphFlagsMapToTheJob) {
  const std::string base =
      "--num-layers 2 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8";
  EXPECT_FALSE(spec::megatron_args_to_job_node(base)["training"]["cuda_graphs"].as<bool>());
  EXPECT_TRUE(spec::megatron_args_to_job_node(base + " --enable-cuda-graph")["training"]["cuda_graphs"].as<bool>());
  EXPECT_TRUE(spec::megatron_args_to_job_node(base + " --external-cuda-graph")["training"]["cuda_graphs"].as<bool>());
  EXPECT_TRUE(
      spec::megatron_args_to_job_node(base + " --cuda-graph-impl transformer_engine")["training"]["cuda_graphs"].as<bool>());
  EXPECT_FALSE(spec::megatron_args_to_job_node(base + " --cuda-graph-impl none")["training"]["cuda_graphs"].as<bool>());
}

// Two MoE layers, EP 4 on 4 GPUs, 2 micro-batches: per layer and micro-batch forward one host synchronisation of
// 100 us (the alltoall dispatcher's split sizes) after a token-count all-gather of 8 experts x 8 B x 4 ranks; none in
// the backward; none with buffers padded to the capacity (static sizes).
std::string moe_job(const std::string& moe_extra, const std::string& training_extra = "") {
  return "model: {name: m, num_layers: 2, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
         " activation: swiglu, vocab_size: 32000, seq_length: 1024,"
         " moe: {num_experts: 8, topk: 2, ffn_hidden_size: 512" + moe_extra + "}}\n"
         "parallelism: {expert: 4}\ntraining: {micro_batch_size: 1, global_batch_size: 8" + training_extra + "}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 4, gpus_per_node: 4}\n";
}

struct SyncCount {
  int syncs = 0;
  int64_t sync_ns = 0;
  int gathers = 0;
  uint64_t gather_bytes = 0;
  int backward_syncs = 0;
};

SyncCount count(const std::string& yaml) {
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
  const workload::Program& p = w.programs[0];
  SyncCount c;
  for (const auto& op : p.ops) {
    const std::string& n = p.name(op);
    if (n == "moe_host_sync") {
      ++c.syncs;
      c.sync_ns = op.duration_ns;
      EXPECT_EQ(op.category, ComputeCategory::Host);
      if (op.phase == workload::Phase::Backward) ++c.backward_syncs;
    }
    if (n == "moe_token_count_all_gather") {
      ++c.gathers;
      c.gather_bytes = op.bytes;
    }
  }
  return c;
}

TEST(HostTime, MoeDispatcherSynchronisesTheHostOncePerForward) {
  const SyncCount a2a = count(moe_job(""));
  EXPECT_EQ(a2a.syncs, 2 * 2);  // layers x micro-batches per rank (GBS 8 / (mbs 1 x DP 4))
  EXPECT_EQ(a2a.backward_syncs, 0);
  EXPECT_EQ(a2a.sync_ns, 100'000);
  EXPECT_EQ(a2a.gathers, 4);
  EXPECT_EQ(a2a.gather_bytes, 8u * 8 * 4);
  // The allgather and flex dispatchers also bring the counts to the host, without the all-gather of counts.
  for (const char* d : {"allgather", "flex"}) {
    const SyncCount c = count(moe_job(std::string(", token_dispatcher: ") + d));
    EXPECT_EQ(c.syncs, 4) << d;
    EXPECT_EQ(c.gathers, 0) << d;
  }
  // Static shapes: no synchronisation, and no all-gather of counts (every split is the capacity).
  const SyncCount padded = count(moe_job(", capacity_factor: 1.0, pad_to_capacity: true"));
  EXPECT_EQ(padded.syncs, 0);
  EXPECT_EQ(padded.gathers, 0);
  EXPECT_EQ(count(moe_job(", capacity_factor: 1.0")).gathers, 4);  // dropped but not padded: counts vary
  // Full recompute re-runs the forward, synchronisation included.
  EXPECT_EQ(count(moe_job("", ", recompute: full")).syncs, 2 * 4);
}

TEST(HostTime, MoeHostSyncIsHostTimeInTheBreakdown) {
  // Without the host issue model the dispatcher's synchronisation is a 100 us stall per layer forward, host time.
  const auto sim = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(moe_job("") + "simulation: {host_time_scale: 0}\n"), {0});
  const report::Breakdown b = report::breakdown(sim.workload.programs[0], sim.result.recorded.at(0), sim.result.step_ns);
  EXPECT_NEAR(b.host_gap_s, 4 * 100e-6, 1e-9);
  // With it, the stall is gone (the host's issue time replaces it) and the GPU's waits for the host are host time: this
  // small layer is host-bound, so they are most of the step, and the breakdown still sums to it.
  const auto hosted = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(moe_job("")), {0});
  const report::Breakdown h =
      report::breakdown(hosted.workload.programs[0], hosted.result.recorded.at(0), hosted.result.step_ns);
  EXPECT_GT(h.host_gap_s, 0.5 * static_cast<double>(hosted.result.step_ns) * 1e-9);
  EXPECT_NEAR(h.total_s(), static_cast<double>(hosted.result.step_ns) * 1e-9, 1e-9);
}

}  // namespace
}  // namespace stepsim
