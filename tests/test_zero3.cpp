// ZeRO-3 / FSDP (issue 13 item 1g): parameters sharded over data parallelism, all-gathered per unit (embedding,
// layer, head) before its forward and again before its backward, gradients reduce-scattered after each unit's
// backward; weights, gradients and optimizer states divided by DP. Hand-computed counts and bytes.
#include <gtest/gtest.h>

#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/model_dims.hpp"
#include "stepsim/workload/static_memory.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

std::string zero_job(int stage, int gbs) {
  return "model: {name: g, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
         " vocab_size: 32000, seq_length: 1024}\n"
         "parallelism: {tensor: 1, pipeline: 1}\n"
         "training: {micro_batch_size: 1, global_batch_size: " + std::to_string(gbs) +
         ", precision: fp16, zero_stage: " + std::to_string(stage) + "}\n"
         "cluster: {gpu: A100-80GB, num_gpus: 16, gpus_per_node: 8, intra_node: {bandwidth_GBps: 300},"
         " inter_node: {bandwidth_Gbps: 200}}\n"
         "simulation: {host_time_scale: 0}\n";  // host issue model off: the closed forms are of the GPU timeline
}

TEST(Zero3, GathersPerUnitAndPassReduceScattersPerMicrobatch) {
  const spec::JobSpec job = test::job_from_yaml(zero_job(3, 32));  // DP 16, 2 micro-batches
  const workload::Workload w = workload::build_megatron_workload(job);
  const workload::Program& p = w.programs[0];
  // Units: embedding, 4 layers, head = 6. Per micro-batch: 6 gathers forward, 6 backward, 6 reduce-scatters.
  int gathers = 0, scatters = 0, other_dp = 0;
  uint64_t gather_bytes = 0, scatter_bytes = 0;
  for (const auto& op : p.ops) {
    if (op.kind != workload::OpKind::Collective || op.group != workload::GroupKind::Dp) continue;
    if (p.name(op) == "zero3_param_all_gather") {
      ++gathers;
      gather_bytes += op.bytes;
    } else if (p.name(op) == "sharded_grad_reduce_scatter") {
      ++scatters;
      scatter_bytes += op.bytes;
    } else if (p.name(op) != "grad_norm_all_reduce" && p.name(op) != "found_inf_all_reduce") {
      ++other_dp;
    }
  }
  EXPECT_EQ(gathers, 2 * 12);
  EXPECT_EQ(scatters, 2 * 6);
  EXPECT_EQ(other_dp, 0);  // no bucketed reduction, no end-of-step parameter all-gather
  // Every parameter gathered twice per micro-batch (fp16: 2 bytes) and its gradient reduced once (fp16: 2 bytes).
  const int64_t params = p.dense_parameters;
  EXPECT_EQ(params, workload::total_parameters(job.model));
  EXPECT_EQ(gather_bytes, static_cast<uint64_t>(2 * 2 * 2 * params));
  EXPECT_EQ(scatter_bytes, static_cast<uint64_t>(2 * 2 * params));
  // A layer's forward waits for its gather: the first compute op of layer 0 has a wait on the dp stream.
  bool waited = false;
  for (const auto& op : p.ops) {
    if (op.kind == workload::OpKind::Compute && op.layer == 0 && op.phase == workload::Phase::Forward) {
      for (uint32_t i = op.wait_begin; i < op.wait_begin + op.wait_count; ++i) {
        waited |= p.waits[i].stream == workload::Stream::Dp;
      }
      break;
    }
  }
  EXPECT_TRUE(waited);
}

// ZeRO-2 keeps only its gradient shard, so gradients cannot accumulate locally over micro-batches: every
// micro-batch reduce-scatters each unit's gradients (DeepSpeed stage 2 reduces every micro-step), no bucketed
// end-of-step reduction; parameters stay whole, so nothing is gathered per unit and the distributed optimizer's
// parameter all-gather still ends the step.
TEST(Zero3, StageTwoReduceScattersEveryMicrobatchAndGathersOnce) {
  const spec::JobSpec job = test::job_from_yaml(zero_job(2, 32));  // DP 16, 2 micro-batches
  const workload::Workload w = workload::build_megatron_workload(job);
  const workload::Program& p = w.programs[0];
  int scatters = 0, gathers = 0, unit_gathers = 0, bucket_reduces = 0;
  uint64_t scatter_bytes = 0, gather_bytes = 0;
  for (const auto& op : p.ops) {
    if (op.kind != workload::OpKind::Collective || op.group != workload::GroupKind::Dp) continue;
    const std::string& n = p.name(op);
    if (n == "sharded_grad_reduce_scatter") ++scatters, scatter_bytes += op.bytes;
    if (n == "dp_param_all_gather") ++gathers, gather_bytes += op.bytes;
    if (n == "zero3_param_all_gather") ++unit_gathers;
    if (n == "dp_grad_reduce_scatter" || n == "dp_grad_all_reduce") ++bucket_reduces;
  }
  EXPECT_EQ(scatters, 2 * 6);  // 6 units x 2 micro-batches
  EXPECT_EQ(bucket_reduces, 0);
  EXPECT_EQ(unit_gathers, 0);
  const int64_t P = p.dense_parameters;
  EXPECT_EQ(scatter_bytes, static_cast<uint64_t>(2 * 2 * P));  // fp16 gradients, twice
  EXPECT_GE(gathers, 1);
  EXPECT_EQ(gather_bytes, static_cast<uint64_t>(2 * P));  // the updated fp16 parameters, once per step
  EXPECT_EQ(p.static_memory.gradients, 2 * P / 16);
  EXPECT_EQ(p.static_memory.weights, 2 * P);
  // On a slow network (5 Gb/s per GPU: the reductions cannot hide under compute) stage 1 with overlapped reduction
  // exposes one gradient reduce-scatter and one parameter all-gather per step, stage 2 a reduce-scatter per
  // micro-batch and the all-gather: with 4 micro-batches and collectives of equal size, (4 + 1) / (1 + 1) = 2.5 x the
  // exposed data-parallel time.
  auto exposed_dp = [&](int stage) {
    std::string y = zero_job(stage, 64);
    y.replace(y.find("bandwidth_Gbps: 200"), 19, "bandwidth_Gbps: 5");
    if (stage == 1) y.replace(y.find("zero_stage: 1"), 13, "zero_stage: 1, overlap_grad_reduce: true");
    const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(y), {0});
    return report::summarize(s, 0).breakdown.exposed_comm_s[report::kDp];
  };
  EXPECT_NEAR(exposed_dp(2) / exposed_dp(1), 2.5, 0.25);
}

TEST(Zero3, ShardsWeightsGradientsAndOptimizerOverDp) {
  const workload::Workload z0 = workload::build_megatron_workload(test::job_from_yaml(zero_job(0, 16)));
  const workload::Workload z1 = workload::build_megatron_workload(test::job_from_yaml(zero_job(1, 16)));
  const workload::Workload z3 = workload::build_megatron_workload(test::job_from_yaml(zero_job(3, 16)));
  const auto& a = z0.programs[0].static_memory;
  const auto& b = z1.programs[0].static_memory;
  const auto& c = z3.programs[0].static_memory;
  const int64_t P = z0.programs[0].dense_parameters;
  EXPECT_EQ(a.weights, 2 * P);
  EXPECT_EQ(a.gradients, 2 * P);
  EXPECT_EQ(a.optimizer, 12 * P);  // fp16: fp32 master + m + v (ZeRO's K = 12)
  EXPECT_EQ(b.optimizer, 12 * P / 16);
  EXPECT_EQ(b.weights, 2 * P);
  EXPECT_EQ(c.weights, 2 * P / 16);
  EXPECT_EQ(c.gradients, 2 * P / 16);
  EXPECT_EQ(c.optimizer, 12 * P / 16);
  // The fp32 copy of the fp16 gradients exists only while the step runs: the optimizer op holds it.
  for (const auto& op : z1.programs[0].ops) {
    if (z1.programs[0].name(op) != "optimizer_step") continue;
    EXPECT_EQ(op.mem_alloc_at_start, 4 * P / 16);
    EXPECT_EQ(op.mem_free_at_end, 4 * P / 16);
  }
}

TEST(Zero3, RefusesTheDistributedOptimizersOverlappedGather) {
  std::string yaml = zero_job(3, 16);
  yaml.replace(yaml.find("zero_stage: 3"), 13, "zero_stage: 3, overlap_param_gather: true");
  const std::string err = test::job_error(yaml);
  EXPECT_NE(err.find("training.overlap_param_gather"), std::string::npos) << err;
  EXPECT_GT(sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(zero_job(3, 16)), {0}).result.step_ns, 0);
}

// DeepSpeed before 0.4.3 (zero3_param_fetch: blocking): one all-gather per parameter tensor (a GPT layer has 12:
// two LayerNorms' weight and bias, four linears' weight and bias), each followed by the host's copy-back of the
// dp per-rank views (dp x 7.3 us), nothing prefetched; full recompute re-gathers a layer inside its backward.
TEST(Zero3, BlockingFetchGathersEachTensorAndCopiesBackPerRank) {
  std::string yaml = zero_job(3, 16);  // DP 16, one micro-batch
  yaml.replace(yaml.find("zero_stage: 3"), 13, "zero_stage: 3, zero3_param_fetch: blocking, recompute: full");
  const spec::JobSpec job = test::job_from_yaml(yaml);
  const workload::Workload w = workload::build_megatron_workload(job);
  const workload::Program& p = w.programs[0];
  int gathers = 0, copies = 0, qkv = 0;
  uint64_t gather_bytes = 0;
  int64_t copy_ns = 0;
  for (const auto& op : p.ops) {
    if (p.name(op) == "zero3_param_all_gather") {
      ++gathers;
      gather_bytes += op.bytes;
      if (op.bytes == 2u * 1024 * 3 * 1024) ++qkv;  // linear_qkv: h x 3h in fp16
    } else if (p.name(op) == "zero3_gather_copy_back") {
      ++copies;
      copy_ns += op.duration_ns;
      EXPECT_EQ(op.category, workload::ComputeCategory::Host);
    }
  }
  // Forward: embedding 1 + 4 layers x 12 + head 1; backward: the same plus each layer's recompute re-gather.
  EXPECT_EQ(gathers, 50 + 98);
  EXPECT_EQ(copies, gathers);
  EXPECT_EQ(qkv, 4 * 3);
  const int64_t P = p.dense_parameters;
  const int64_t layers = 4 * (2 * 2 * 1024 + 1024 * 3 * 1024 + 3 * 1024 + 1024 * 1024 + 1024 +
                              2 * 1024 * 4096 + 4096 + 1024);
  EXPECT_EQ(gather_bytes, static_cast<uint64_t>(2 * (2 * P + layers)));
  EXPECT_EQ(copy_ns, int64_t{148} * 16 * 7300);
  // Nothing overlaps: the step is at least compute + every gather + every copy-back, so slower than prefetch.
  std::string pre = zero_job(3, 16);
  pre.replace(pre.find("zero_stage: 3"), 13, "zero_stage: 3, recompute: full");
  const int64_t blocking = sim::run_simulation(stepsim::catalog::shipped(), job, {0}).result.step_ns;
  const int64_t prefetch = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(pre), {0}).result.step_ns;
  EXPECT_GT(blocking, prefetch + copy_ns);
}

TEST(Zero3, BlockingFetchNeedsStage3) {
  std::string yaml = zero_job(1, 16);
  yaml.replace(yaml.find("zero_stage: 1"), 13, "zero_stage: 1, zero3_param_fetch: blocking");
  const std::string err = test::job_error(yaml);
  EXPECT_NE(err.find("training.zero3_param_fetch"), std::string::npos) << err;
}

}  // namespace
}  // namespace stepsim
