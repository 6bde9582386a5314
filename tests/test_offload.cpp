// CPU optimizer offload and activation offload (issue 13 item 1g; MoFa eq. 27-28 and 33-35; Megatron-LM's
// HybridDeviceOptimizer and Transformer Engine's CPU offload as Megatron drives them). Every expected time is
// bytes / rate with the rates set in the job (cluster.host_to_device_GBps, cluster.cpu_optimizer_GBps), so each
// number below is computed by hand from the parameter count and the stored activation bytes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

// Host link 10 GB/s, CPU optimizer 20 GB/s: 1 byte = 0.1 ns over PCIe, 0.05 ns of CPU time.
constexpr double kLinkBps = 10e9, kCpuBps = 20e9;

std::string job(int layers, const std::string& training, int gpus = 1) {
  return "model: {name: g, num_layers: " + std::to_string(layers) +
         ", hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096, vocab_size: 32000, seq_length: 1024}\n"
         "parallelism: {data: " + std::to_string(gpus) + "}\n"
         "training: {micro_batch_size: 1, global_batch_size: " + std::to_string(2 * gpus) + ", " + training + "}\n"
         "cluster: {gpu: H100-SXM, num_gpus: " + std::to_string(gpus) + ", gpus_per_node: " + std::to_string(gpus) +
         ", host_to_device_GBps: 10, cpu_optimizer_GBps: 20}\n";
}

int64_t ns(double bytes, double rate) { return std::llround(bytes / rate * 1e9); }

struct Timed {
  std::string name;
  int64_t begin = 0, end = 0;
  const workload::Op* op = nullptr;
};

struct Sim {
  sim::Simulation sim;
  std::vector<Timed> ops;  // rank 0, in completion order
  std::vector<Timed> named(const std::string& n) const {
    std::vector<Timed> r;
    for (const Timed& t : ops)
      if (t.name == n) r.push_back(t);
    return r;
  }
};

Sim run(const std::string& yaml) {
  Sim r{sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(yaml), {0}), {}};
  const workload::Program& p = r.sim.workload.programs[0];
  for (const sim::OpRecord& rec : r.sim.result.recorded[0].ops)
    r.ops.push_back({p.name(p.ops[rec.op]), rec.begin_ns, rec.end_ns, &p.ops[rec.op]});
  return r;
}

TEST(OptimizerOffload, CopiesAndCpuStepInSeriesAsMofaEq28) {
  const Sim r = run(job(2, "distributed_optimizer: true, optimizer_offload: true"));
  const int64_t P = r.sim.workload.programs[0].dense_parameters;  // one GPU: the whole model is the shard
  const auto d2h = r.named("optimizer_grad_to_host"), cpu = r.named("cpu_optimizer_step"),
             h2d = r.named("optimizer_params_to_device");
  ASSERT_EQ(d2h.size(), 1u);
  ASSERT_EQ(cpu.size(), 1u);
  ASSERT_EQ(h2d.size(), 1u);
  EXPECT_TRUE(r.named("optimizer_step").empty());  // nothing left for the GPU's Adam
  // fp32 gradients down, Adam over fp32 weight/gradient/m/v (28 B of host DRAM per parameter), fp32 weights up.
  EXPECT_EQ(d2h[0].end - d2h[0].begin, ns(4.0 * P, kLinkBps));
  EXPECT_EQ(cpu[0].end - cpu[0].begin, ns(28.0 * P, kCpuBps));
  EXPECT_EQ(h2d[0].end - h2d[0].begin, ns(4.0 * P, kLinkBps));
  EXPECT_EQ(cpu[0].begin, d2h[0].end);
  EXPECT_EQ(h2d[0].begin, cpu[0].end);
  EXPECT_EQ(d2h[0].op->stream, workload::Stream::Memcpy);
  EXPECT_EQ(cpu[0].op->stream, workload::Stream::Compute);
  // The whole chain is optimizer time (MoFa's T_update), and the step ends with the weights back on the GPU.
  const report::Summary s = report::summarize(r.sim, 0);
  EXPECT_NEAR(s.breakdown.optimizer_s, 1e-9 * static_cast<double>(ns(4.0 * P, kLinkBps) * 2 + ns(28.0 * P, kCpuBps)),
              1e-4);
  EXPECT_EQ(r.sim.result.step_ns, h2d[0].end);
}

TEST(OptimizerOffload, OverlapPipelinesEightChunks) {
  const Sim r = run(job(2, "distributed_optimizer: true, optimizer_offload: true, optimizer_offload_overlap: true"));
  const int64_t P = r.sim.workload.programs[0].dense_parameters;
  const auto d2h = r.named("optimizer_grad_to_host"), cpu = r.named("cpu_optimizer_step"),
             h2d = r.named("optimizer_params_to_device");
  ASSERT_EQ(d2h.size(), 8u);
  ASSERT_EQ(cpu.size(), 8u);
  ASSERT_EQ(h2d.size(), 8u);
  // The CPU is the bottleneck (28 B at 20 GB/s vs 4 B at 10 GB/s): first chunk's copy down, the whole CPU step, the
  // last chunk's copy up; chunk sizes differ by at most one parameter, durations by a nanosecond each.
  const int64_t span = h2d.back().end - d2h.front().begin;
  const int64_t expect = ns(4.0 * P / 8, kLinkBps) + ns(28.0 * P, kCpuBps) + ns(4.0 * P / 8, kLinkBps);
  EXPECT_NEAR(static_cast<double>(span), static_cast<double>(expect), 16.0);
  for (size_t c = 0; c < 8; ++c) {
    EXPECT_GE(cpu[c].begin, d2h[c].end);
    EXPECT_GE(h2d[c].begin, cpu[c].end);
  }
}

TEST(OptimizerOffload, GpuKeepsTheRestOfTheShardAndItsStates) {
  const sim::Simulation off = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(job(2, "distributed_optimizer: true")), {0});
  const sim::Simulation half = sim::run_simulation(stepsim::catalog::shipped(), 
      test::job_from_yaml(job(2, "distributed_optimizer: true, optimizer_offload: true, optimizer_offload_fraction: 0.5")),
      {0});
  const int64_t P = off.workload.programs[0].dense_parameters;
  // MoFa eq. 27: fp32 master weights + Adam m and v (12 B) of the offloaded half leave the GPU; bf16 weights and fp32
  // main gradients stay.
  const int64_t saved = report::summarize(off, 0).per_stage[0].static_bytes - report::summarize(half, 0).per_stage[0].static_bytes;
  EXPECT_EQ(saved, P * 12 - std::llround(static_cast<double>(P * 12) * 0.5));
  // The GPU's Adam runs over the other half (30 B of HBM traffic per parameter under bf16).
  bool gpu_step = false;
  for (const auto& op : half.workload.programs[0].ops) {
    if (half.workload.programs[0].name(op) != "optimizer_step") continue;
    gpu_step = true;
    EXPECT_EQ(op.bytes, static_cast<uint64_t>((P - std::llround(P * 0.5)) * 30));
  }
  EXPECT_TRUE(gpu_step);
}

TEST(OptimizerOffload, DataParallelShardOnly) {
  // Four ranks: each rank copies and updates its quarter of the parameters.
  const Sim r = run(job(2, "distributed_optimizer: true, optimizer_offload: true", 4));
  const int64_t P = r.sim.workload.programs[0].dense_parameters;
  const auto d2h = r.named("optimizer_grad_to_host");
  ASSERT_EQ(d2h.size(), 1u);
  EXPECT_EQ(d2h[0].op->bytes, static_cast<uint64_t>(P / 4 * 4));
  // Under an overlap model the CPU's step is not a GPU kernel: communication in flight never slows it.
  const Sim o = run(job(2, "distributed_optimizer: true, optimizer_offload: true, overlap_grad_reduce: true", 4) +
                    "simulation: {overlap_model: coefficients}\n");
  const auto cpu = o.named("cpu_optimizer_step");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(cpu[0].end - cpu[0].begin, ns(28.0 * (P / 4), kCpuBps));
}

// Two layers, offload of layer 0 (N = 1): its copy must end before layer 1's forward (L - N + 0 = 1) and its reload
// starts when its own backward is next (L - 1 - N + 0 = 0), so on one GPU both copies are exposed in full.
TEST(ActivationOffload, TwoLayersOneOffloadedExposesBothCopies) {
  const Sim r = run(job(2, "activation_offload_layers: 1"));
  const workload::Program& p = r.sim.workload.programs[0];
  std::map<int, int64_t> stored;  // micro-batch -> layer 0's forward allocations
  for (const auto& op : p.ops)
    if (op.layer == 0 && op.phase == workload::Phase::Forward && op.stream == workload::Stream::Compute)
      stored[op.microbatch] += op.mem_alloc_at_start - op.mem_transient;
  const auto out = r.named("activation_offload"), back = r.named("activation_reload");
  ASSERT_EQ(out.size(), 2u);  // two micro-batches
  ASSERT_EQ(back.size(), 2u);
  int64_t copies = 0;
  for (size_t i = 0; i < 2; ++i) {
    const int mb = out[i].op->microbatch;
    EXPECT_EQ(static_cast<int64_t>(out[i].op->bytes), stored[mb]);
    EXPECT_EQ(out[i].op->mem_free_at_end, stored[mb]);  // freed on the GPU once on the host
    EXPECT_EQ(back[i].op->mem_alloc_at_start, stored[mb]);
    EXPECT_EQ(out[i].end - out[i].begin, ns(static_cast<double>(stored[mb]), kLinkBps));
    copies += (out[i].end - out[i].begin) + (back[i].end - back[i].begin);
  }
  // Layer 1's first forward op waits for the copy; layer 0's first backward op for the reload.
  for (const Timed& t : r.ops) {
    if (t.op->stream != workload::Stream::Compute || t.op->microbatch != out[0].op->microbatch) continue;
    if (t.op->layer == 1 && t.op->phase == workload::Phase::Forward) {
      EXPECT_GE(t.begin, out[0].end);
    }
    if (t.op->layer == 0 && t.op->phase == workload::Phase::Backward) {
      EXPECT_GE(t.begin, back[0].end);
    }
  }
  const report::Summary s = report::summarize(r.sim, 0);
  EXPECT_NEAR(s.breakdown.offload_s, 1e-9 * static_cast<double>(copies), 1e-8);
  // Layer 0's activations are on the host while layer 1 runs: the peak is lower by about one layer's worth.
  const Sim plain = run(job(2, ""));
  EXPECT_LT(report::summarize(r.sim, 0).per_stage[0].peak_bytes, report::summarize(plain.sim, 0).per_stage[0].peak_bytes);
}

TEST(ActivationOffload, ReloadIssuedLMinus1MinusNLayersAhead) {
  // L = 6, N = 2: layer 0's reload is issued as the backward of layer 3 begins, layer 1's at layer 4's (program
  // order on the rank), and each layer's backward waits for its reload to end.
  const Sim r = run(job(6, "activation_offload_layers: 2"));
  const workload::Program& p = r.sim.workload.programs[0];
  std::map<std::pair<int, int>, size_t> first_bwd;  // (mb, layer) -> index of its first backward compute op
  std::map<std::pair<int, int>, size_t> reload;     // (mb, layer) -> index of its reload
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const workload::Op& op = p.ops[i];
    if (p.name(op) == "activation_reload") reload[{op.microbatch, op.layer}] = i;
    else if (op.stream == workload::Stream::Compute && op.phase == workload::Phase::Backward && op.layer >= 0)
      first_bwd.try_emplace({op.microbatch, op.layer}, i);
  }
  ASSERT_EQ(reload.size(), 4u);  // layers 0 and 1 of both micro-batches
  for (const auto& [at, i] : reload) {
    const auto [mb, layer] = at;
    ASSERT_TRUE(layer == 0 || layer == 1);
    EXPECT_LT(i, first_bwd.at({mb, layer + 3}));  // issued just before layer L-1-N+i's backward
    EXPECT_GT(i, first_bwd.at({mb, layer + 4}));  // after layer L-N+i's began
  }
  std::map<std::pair<int, int>, int64_t> bwd_begin, reload_end;
  for (const Timed& t : r.ops) {
    if (t.name == "activation_reload") reload_end[{t.op->microbatch, t.op->layer}] = t.end;
    if (t.op->stream == workload::Stream::Compute && t.op->phase == workload::Phase::Backward && t.op->layer >= 0) {
      auto [it, fresh] = bwd_begin.try_emplace({t.op->microbatch, t.op->layer}, t.begin);
      if (!fresh) it->second = std::min(it->second, t.begin);
    }
  }
  for (const auto& [at, end] : reload_end) EXPECT_GE(bwd_begin.at(at), end);
}

TEST(Offload, RefusedWhereMegatronRefusesThem) {
  auto err = [](const std::string& training, int layers = 4) { return test::job_error(job(layers, training)); };
  EXPECT_NE(err("optimizer_offload: true").find("key training.optimizer_offload: needs distributed_optimizer"),
            std::string::npos);
  EXPECT_NE(err("optimizer_offload_fraction: 0.5").find("training.optimizer_offload_fraction: applies to"), std::string::npos);
  EXPECT_NE(err("optimizer_offload_overlap: true").find("training.optimizer_offload_overlap: applies to"), std::string::npos);
  EXPECT_NE(err("distributed_optimizer: true, optimizer_offload: true, optimizer_offload_fraction: 0").find("0 offloads nothing"),
            std::string::npos);
  EXPECT_NE(err("distributed_optimizer: true, optimizer_offload: true, optimizer_offload_fraction: 1.5").find("optimizer_offload_fraction"),
            std::string::npos);
  EXPECT_NE(err("activation_offload_layers: 4").find("must be below model.num_layers (4)"), std::string::npos);
  EXPECT_NE(err("activation_offload_layers: 1, recompute: selective").find("needs training.recompute: none"),
            std::string::npos);
  const std::string pp = test::job_error(
      "model: {name: g, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096, vocab_size: 32000,"
      " seq_length: 1024}\n"
      "parallelism: {pipeline: 2}\ntraining: {micro_batch_size: 1, global_batch_size: 2, activation_offload_layers: 1}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 2, gpus_per_node: 2}\n");
  EXPECT_NE(pp.find("training.activation_offload_layers: needs parallelism.pipeline: 1"), std::string::npos);
}

TEST(Offload, SummaryShowsWhereTheTimeWent) {
  const std::string path = test::write_temp("offload.yaml", job(4, "activation_offload_layers: 2, distributed_optimizer: "
                                                                   "true, optimizer_offload: true"));
  const test::CliResult r = test::run_cli("simulate " + path + " --json " + test::temp_dir() + "/offload.json");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("exposed activation offload"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(test::read_file(test::temp_dir() + "/offload.json"));
  EXPECT_GT(j["breakdown_s"]["offload"].get<double>(), 0.0);
  EXPECT_GT(j["breakdown_s"]["optimizer"].get<double>(), 0.0);
}

}  // namespace
}  // namespace stepsim
