// The host issue model (cost/host_issue.hpp, docs/COST-MODELS.md "Host issue model"): eager PyTorch issues a rank's
// ops in program order from one thread, the GPU cannot start an op before it is issued, and the host stops after a
// synchronisation op until the GPU has run it. Hand-built programs with times chosen so each case has one answer.
#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include <gtest/gtest.h>

#include "stepsim/cost/compute/host_issue.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using workload::Op;
using workload::Phase;

// A single-GPU workload (the small GPT's layout) whose one program is replaced by `ops` on the compute stream, each
// with its GPU time and host time in us; `sync` marks the ops the host waits for.
workload::Workload one_rank(const std::vector<std::array<double, 2>>& ops, const std::vector<int>& sync = {}) {
  workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(test::small_gpt_yaml(1, 1, 1, 1)));
  workload::Program p;
  p.stage = 0;
  p.names = {"op"};
  p.host_prefix.push_back(0);
  for (size_t i = 0; i < ops.size(); ++i) {
    Op op;
    op.duration_ns = static_cast<int64_t>(ops[i][0] * 1e3);
    op.host_ns = static_cast<int32_t>(ops[i][1] * 1e3);
    op.host_sync = std::find(sync.begin(), sync.end(), static_cast<int>(i)) != sync.end();
    if (op.host_sync) p.host_syncs.push_back(static_cast<uint32_t>(i));
    p.host_prefix.push_back(p.host_prefix.back() + op.host_ns);
    p.stream_ops[0].push_back(static_cast<uint32_t>(i));
    p.ops.push_back(op);
  }
  w.programs = {p};
  w.role_of_stage = {0};
  return w;
}

double step_us(const workload::Workload& w) {
  const auto comm = sim::make_collective_model(stepsim::catalog::shipped(), w.job);
  sim::EngineOptions o;
  o.record_ranks = {0};
  return static_cast<double>(sim::simulate(w, *comm, o).step_ns) * 1e-3;
}

TEST(HostIssue, TheGpuWaitsForTheHostAndTheHostForASync) {
  // GPU-bound: 3 ops of 100 us each issued in 10 us: the first starts at 10, the rest back to back: 310 us.
  EXPECT_DOUBLE_EQ(step_us(one_rank({{100, 10}, {100, 10}, {100, 10}})), 310);
  // Host-bound: 3 ops of 10 us issued in 100 us each: each ends 10 us after its issue: 100, 200, 300 + 10 = 310 us.
  EXPECT_DOUBLE_EQ(step_us(one_rank({{10, 100}, {10, 100}, {10, 100}})), 310);
  // A sync after op 0 (GPU 200 us, issued at 10): the host waits until it ends at 210, then issues op 1 (10 us) and
  // op 2 (10 us): op 1 runs 220-320, op 2 starts at 320 (issued at 230): 420 us. Without the sync the host would have
  // issued both by 30 and the GPU run them back to back: 410 us.
  EXPECT_DOUBLE_EQ(step_us(one_rank({{200, 10}, {100, 10}, {100, 10}}, {0})), 420);
  EXPECT_DOUBLE_EQ(step_us(one_rank({{200, 10}, {100, 10}, {100, 10}})), 410);
  // Host time spent before a sync is not lost: issuing op 1 (50 us) overlaps nothing (it comes after the sync), but
  // a sync whose op ends before the host gets there costs nothing: op 0 (5 us, issued at 100) ends at 105, and the
  // host, which issued op 0 at 100, goes on at 105 > 100: op 1 issued at 155, ends at 165.
  EXPECT_DOUBLE_EQ(step_us(one_rank({{5, 100}, {10, 50}}, {0})), 165);
}

TEST(HostIssue, LayerHostTimesAreSpreadOverTheLayersOpsAndTheSyncIsTheDispatchers) {
  // Qwen3-30B-A3B's layer at one EP-8 rank's share (tests/test_moe_host_note.cpp's job), host speed 1: every forward op
  // of a MoE layer and micro-batch shares the measured 5,803.5 us, every backward op the 5,029.275 us.
  spec::JobSpec j = test::job_from_yaml(
      "model: {name: q, num_layers: 2, hidden_size: 2048, num_attention_heads: 32, num_query_groups: 4,"
      " kv_channels: 128, ffn_hidden_size: 6144, activation: swiglu, normalization: rmsnorm, add_bias_linear: false,"
      " position_embedding: rope, tie_embeddings: false, vocab_size: 1024, seq_length: 4096,"
      " moe: {num_experts: 128, topk: 8, ffn_hidden_size: 768}}\n"
      "parallelism: {data: 8, expert: 8}\ntraining: {micro_batch_size: 1, global_batch_size: 16, precision: bf16}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\nsimulation: {host_time_scale: 1}\n");
  workload::Workload w = sim::timed_workload(stepsim::catalog::shipped(), j);
  const workload::Program& p = w.programs[0];
  ASSERT_EQ(p.host_prefix.size(), p.ops.size() + 1);
  std::map<std::tuple<int, int, bool>, int64_t> host;  // (micro-batch, layer, backward) -> host ns
  int64_t other = 0;
  int syncs = 0;
  for (const Op& op : p.ops) {
    if (op.host_sync) {
      ++syncs;
      EXPECT_EQ(p.name(op), "moe_host_sync");
      EXPECT_EQ(op.duration_ns, 0);  // the stall it stood for is the host's issue time now
    }
    if (op.layer >= 0 && op.phase != Phase::Optimizer) host[{op.microbatch, op.layer, op.phase == Phase::Backward}] += op.host_ns;
    else other += op.host_ns;
  }
  EXPECT_EQ(syncs, 2 * 2);  // one per MoE layer forward and micro-batch
  EXPECT_EQ(p.host_syncs.size(), 4u);
  ASSERT_EQ(host.size(), 2u * 2 * 2);
  for (const auto& [key, ns] : host) {
    const double want = std::get<2>(key) ? cost::kHostMoeLayerBackwardUs : cost::kHostMoeLayerForwardUs;
    EXPECT_NEAR(static_cast<double>(ns) * 1e-3, want, 0.1) << "rounding to whole ns per op";
  }
  EXPECT_EQ(p.host_prefix.back(), other + [&] {
    int64_t s = 0;
    for (const auto& [k, ns] : host) s += ns;
    return s;
  }());
  // CUDA graphs and host_time_scale 0 turn it off.
  EXPECT_EQ(sim::host_time_scale(stepsim::catalog::shipped(), test::job_from_yaml(test::small_gpt_yaml(1, 1, 1, 1, "", ", cuda_graphs: true", ""))), 0.0);
  cost::assign_host_issue(w, 0);
  EXPECT_TRUE(w.programs[0].host_prefix.empty());
  for (const Op& op : w.programs[0].ops) EXPECT_EQ(op.host_ns, 0);
}

TEST(HostIssue, ABadHostSpeedIsAnInputError) {
  std::string yaml = test::small_gpt_yaml(1, 1, 1, 1);
  yaml.replace(yaml.find("host_time_scale: 0"), 18, "host_time_scale: -2");
  EXPECT_NE(test::job_error(yaml).find("simulation.host_time_scale"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
