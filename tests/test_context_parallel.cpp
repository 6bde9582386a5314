// Context parallelism as Megatron-Core runs it (issue 13 item 1f): ring attention (cp_comm_type p2p, the default),
// the K/V all-gather (all_gather) and DeepSpeed-Ulysses (a2a). Call counts and bytes are hand-counted from the
// job; the ring's timing is checked against the alpha-beta closed form on a deliberately slow network.
#include <gtest/gtest.h>

#include <map>

#include "stepsim/report/breakdown.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

// 4 layers, h 1024, 16 heads of 64 in 4 query groups, s 4096 on c = 4 context ranks of one node, 2 micro-batches.
std::string cp_job(const std::string& type) {
  return "model: {name: gqa, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, num_query_groups: 4,"
         " ffn_hidden_size: 4096, vocab_size: 32000, seq_length: 4096}\n"
         "parallelism: {context: 4, data: 1, cp_comm_type: " + type + "}\n"
         "training: {micro_batch_size: 1, global_batch_size: 2}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 4, gpus_per_node: 4}\n";
}

TEST(ContextParallel, RingPassesKvBlocksAndDkvAround) {
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(cp_job("p2p")));
  const workload::Program& p = w.programs[0];
  // This rank's K/V block: beta x b x s/c x (2 x groups x d) = 2 x 1024 x 512 bytes.
  const uint64_t block = 2ull * 1 * (4096 / 4) * (2 * 4 * 64);
  std::map<std::string, int> calls;
  for (const auto& op : p.ops) {
    if (op.kind == workload::OpKind::Collective && op.group == workload::GroupKind::Cp) {
      EXPECT_EQ(op.coll, workload::CollType::SendRecv) << p.name(op);
      EXPECT_EQ(op.bytes, block) << p.name(op);
      ++calls[p.name(op)];
    }
    if (p.name(op).rfind("core_attention", 0) == 0) {
      ++calls[p.name(op)];
      // Each ring step walks this rank's s/c = 1024 keys at head dim 64: the attention efficiency's shape.
      EXPECT_EQ(op.gemm_n, 4096 / 4) << p.name(op);
      EXPECT_EQ(op.gemm_k, 64) << p.name(op);
    }
  }
  // Per layer and micro-batch: forward c - 1 = 3 K/V passes and c = 4 steps (1 local + 3); backward 3 K/V passes,
  // 4 steps and 4 dK/dV passes (the last brings each dK/dV home). 4 layers x 2 micro-batches.
  EXPECT_EQ(calls["cp_kv_ring_exchange"], 8 * (3 + 3));
  EXPECT_EQ(calls["cp_dkv_ring_exchange"], 8 * 4);
  EXPECT_EQ(calls["core_attention_ring_local"], 8);
  EXPECT_EQ(calls["core_attention_ring_step"], 8 * 3);
  EXPECT_EQ(calls["core_attention_ring_bwd"], 8 * 4);
  const report::CommBytes cb = report::comm_bytes(w, 0);
  EXPECT_EQ(cb.calls[report::kCp], uint64_t(8 * 10));
  EXPECT_NEAR(double(cb.volume[report::kCp]), 8.0 * 10 * double(block), 1.0);  // bus factor 1: a send/recv
}

TEST(ContextParallel, PyTorchsRingGathersKvOnceAndMergesAndAccumulatesInFp32) {
  // torchtitan's CP (training.framework: torchtitan): the same job on 4 context ranks, K/V repeated to all 16 heads
  // before SDPA. Per rank: T = 1024 tokens; out = q = T x 16 x 64 = 1,048,576 elements; K and V expanded
  // kv = T x 16 x 128 = 2,097,152 elements (4x the projected 4 groups). Hand-counted from the templated ring attention
  // (pytorch_ring.cpp has the per-element bytes: K/V concat 4, merge 38, cast back 6, accumulate 10, partial
  // accumulate 13, dK/dV concat 8, zeros 4).
  std::string yaml = cp_job("p2p");
  yaml.replace(yaml.find("training: {"), 11, "training: {framework: torchtitan, ");
  yaml.replace(yaml.find("ffn_hidden_size"), 15, "activation: swiglu, normalization: rmsnorm, ffn_hidden_size");
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
  const workload::Program& p = w.programs[0];
  const uint64_t out = 1024ull * 16 * 64, kv = 1024ull * 16 * 128;
  std::map<std::string, std::vector<uint64_t>> bytes;  // layer 0, first micro-batch, in order
  for (const auto& op : p.ops) {
    if (op.layer != 0 || op.microbatch != 0) continue;
    const std::string& n = p.name(op);
    if (n.rfind("cp_", 0) != 0 && n.rfind("core_attention", 0) != 0) continue;
    bytes[n + (op.phase == workload::Phase::Forward ? "" : "/bwd")].push_back(op.bytes);
  }
  // One all-gather of every rank's K/V per pass (torchtitan's default rotate method), no K/V ring passes.
  EXPECT_EQ(bytes["cp_kv_all_gather"], std::vector<uint64_t>{2 * kv * 4});
  EXPECT_EQ(bytes["cp_kv_all_gather/bwd"], std::vector<uint64_t>{2 * kv * 4});
  EXPECT_TRUE(bytes["cp_kv_ring_exchange"].empty());
  // Forward: step 0 concatenates K/V for the rotation; steps 1-2 also merge; step 3 (the last) merges only.
  EXPECT_EQ(bytes["cp_ring_merge"], (std::vector<uint64_t>{4 * kv, 4 * kv + 38 * out, 4 * kv + 38 * out, 38 * out}));
  EXPECT_EQ(bytes["cp_ring_output_cast"], std::vector<uint64_t>{6 * out});
  // Backward: fp32 zeros for dQ, dK, dV; step 0 adds its dK/dV whole (10), later steps into the first half (13); every
  // step concatenates the fp32 dK/dV (8) and passes them on in fp32, adds dQ (10), and all but the last concatenate
  // K/V (4).
  EXPECT_EQ(bytes["cp_ring_grad_zeros/bwd"], std::vector<uint64_t>{4 * (out + kv)});
  EXPECT_EQ(bytes["cp_ring_grad_accumulate/bwd"],
            (std::vector<uint64_t>{(4 + 10 + 8) * kv + 10 * out, (4 + 13 + 8) * kv + 10 * out,
                                   (4 + 13 + 8) * kv + 10 * out, (13 + 8) * kv + 10 * out}));
  EXPECT_EQ(bytes["cp_dkv_ring_exchange/bwd"], std::vector<uint64_t>(4, 4 * kv));
  EXPECT_EQ(bytes["cp_ring_grad_cast/bwd"], std::vector<uint64_t>{6 * (out + kv)});
  EXPECT_EQ(bytes["core_attention_ring_step"].size(), 3u);
  EXPECT_EQ(bytes["core_attention_ring_bwd/bwd"].size(), 4u);
  // Compiled, the later steps' K/V concatenations are dead code (the all-gather rotater gathers once and ignores
  // them): only step 0 concatenates, forward and backward.
  std::string compiled = yaml;
  compiled.replace(compiled.find("framework: torchtitan, "), 23, "framework: torchtitan, compile: true, ");
  const workload::Workload wc = workload::build_megatron_workload(test::job_from_yaml(compiled));
  std::map<std::string, std::vector<uint64_t>> cbytes;
  for (const auto& op : wc.programs[0].ops) {
    if (op.layer != 0 || op.microbatch != 0) continue;
    const std::string& n = wc.programs[0].name(op);
    if (n.rfind("cp_ring_", 0) != 0) continue;
    cbytes[n + (op.phase == workload::Phase::Forward ? "" : "/bwd")].push_back(op.bytes);
  }
  EXPECT_EQ(cbytes["cp_ring_merge"], (std::vector<uint64_t>{4 * kv, 38 * out, 38 * out, 38 * out}));
  EXPECT_EQ(cbytes["cp_ring_grad_accumulate/bwd"],
            (std::vector<uint64_t>{(4 + 10 + 8) * kv + 10 * out, (13 + 8) * kv + 10 * out, (13 + 8) * kv + 10 * out,
                                   (13 + 8) * kv + 10 * out}));
  // Megatron-Core's ring (Transformer Engine) has none of this bookkeeping.
  const workload::Workload mc = workload::build_megatron_workload(test::job_from_yaml(cp_job("p2p")));
  for (const auto& op : mc.programs[0].ops) EXPECT_NE(mc.programs[0].name(op).rfind("cp_ring_", 0), 0u);
}

TEST(ContextParallel, RingStepWaitsForItsKvBlock) {
  // c = 2 over two single-GPU nodes joined by a 1 Gb/s link: the exchange (8 MiB) takes far longer than a step.
  const spec::JobSpec job = test::job_from_yaml(
      "model: {name: g, num_layers: 2, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
      " vocab_size: 32000, seq_length: 4096}\n"
      "parallelism: {context: 2, data: 1}\ntraining: {micro_batch_size: 1, global_batch_size: 1}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 2, gpus_per_node: 1, inter_node: {bandwidth_Gbps: 1, latency_us: 5}}\n"
      "simulation: {host_time_scale: 0}\n");  // host issue model off: the exchange's timing is under test
  const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), job, {0});
  const workload::Program& p = s.workload.programs[0];
  const sim::RankTimeline& tl = s.result.recorded.at(0);
  const sim::OpRecord *local = nullptr, *exchange = nullptr, *step = nullptr;
  for (const sim::OpRecord& r : tl.ops) {
    const workload::Op& op = p.ops[r.op];
    if (op.layer != 0 || op.phase != workload::Phase::Forward) continue;
    const std::string& n = p.name(op);
    if (n == "core_attention_ring_local") local = &r;
    if (n == "cp_kv_ring_exchange") exchange = &r;
    if (n == "core_attention_ring_step") step = &r;
  }
  ASSERT_TRUE(local && exchange && step);
  // K/V block 2 x 2048 x 2048 bytes; alpha-beta: 5 us + 8388608 B / (1e9 / 8 B/s) = 67.113864 ms.
  EXPECT_EQ(exchange->end_ns - exchange->begin_ns, 5000 + 67108864);
  EXPECT_EQ(exchange->begin_ns, local->begin_ns);  // sent while the local block computes
  EXPECT_LT(local->end_ns, exchange->end_ns);
  EXPECT_EQ(step->begin_ns, exchange->end_ns);     // the next step starts when its block has arrived
}

TEST(ContextParallel, CompiledPyTorchRingWaitsForItsCollectivesWhereIssued) {
  // torchtitan's ring on c = 2 single-GPU nodes over a 1 Gb/s link, so that every collective outlasts a step. Eager,
  // the K/V all-gather runs under the local step (its result is first used by step 1); compiled, the traced
  // wait_tensor follows the gather at once, so the local step starts when it ends; in backward each step after the
  // first also waits for the previous step's dK/dV exchange.
  auto run = [](bool compiled) {
    const spec::JobSpec job = test::job_from_yaml(
        "model: {name: g, num_layers: 2, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
        " activation: swiglu, normalization: rmsnorm, vocab_size: 32000, seq_length: 4096}\n"
        "parallelism: {context: 2, data: 1}\n"
        "training: {framework: torchtitan, compile: " + std::string(compiled ? "true" : "false") +
        ", micro_batch_size: 1, global_batch_size: 1}\n"
        "cluster: {gpu: H100-SXM, num_gpus: 2, gpus_per_node: 1, inter_node: {bandwidth_Gbps: 1, latency_us: 5}}\n"
        "simulation: {host_time_scale: 0}\n");
    return sim::run_simulation(stepsim::catalog::shipped(), job, {0});
  };
  for (const bool compiled : {false, true}) {
    const sim::Simulation s = run(compiled);
    const workload::Program& p = s.workload.programs[0];
    std::map<std::string, std::vector<const sim::OpRecord*>> at;  // layer 0, in order
    for (const sim::OpRecord& r : s.result.recorded.at(0).ops) {
      const workload::Op& op = p.ops[r.op];
      if (op.layer != 0) continue;
      const std::string& n = p.name(op);
      if (n.rfind("cp_", 0) == 0 || n.rfind("core_attention", 0) == 0) {
        at[n + (op.phase == workload::Phase::Forward ? "" : "/bwd")].push_back(&r);
      }
    }
    ASSERT_EQ(at["cp_kv_all_gather"].size(), 1u);
    ASSERT_EQ(at["core_attention_ring_local"].size(), 1u);
    ASSERT_EQ(at["core_attention_ring_bwd/bwd"].size(), 2u);
    ASSERT_EQ(at["cp_dkv_ring_exchange/bwd"].size(), 2u);
    const sim::OpRecord& gather = *at["cp_kv_all_gather"][0];
    const sim::OpRecord& local = *at["core_attention_ring_local"][0];
    const sim::OpRecord& bwd_gather = *at["cp_kv_all_gather/bwd"][0];
    const sim::OpRecord& bwd0 = *at["core_attention_ring_bwd/bwd"][0];
    const sim::OpRecord& bwd1 = *at["core_attention_ring_bwd/bwd"][1];
    const sim::OpRecord& exchange0 = *at["cp_dkv_ring_exchange/bwd"][0];
    if (compiled) {
      EXPECT_GE(local.begin_ns, gather.end_ns);
      EXPECT_GE(bwd0.begin_ns, bwd_gather.end_ns);
      EXPECT_GE(bwd1.begin_ns, exchange0.end_ns);
    } else {
      EXPECT_LT(local.begin_ns, gather.end_ns);
      EXPECT_LT(bwd1.begin_ns, exchange0.end_ns);
    }
  }
}

TEST(ContextParallel, LargeRingsGroupStepsButMoveEveryBlock) {
  // c = 64: 16 ops per ring (4 blocks each) instead of 64, the same bytes (63 K/V blocks forward).
  const spec::JobSpec job = test::job_from_yaml(
      "model: {name: g, num_layers: 1, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
      " vocab_size: 32000, seq_length: 131072}\n"
      "parallelism: {context: 64, data: 1}\ntraining: {micro_batch_size: 1, global_batch_size: 1}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 64, gpus_per_node: 8}\n");
  const workload::Workload w = workload::build_megatron_workload(job);
  const workload::Program& p = w.programs[0];
  const uint64_t block = 2ull * (131072 / 64) * 2048;
  int fwd_steps = 0, fwd_exchanges = 0;
  uint64_t fwd_bytes = 0, dkv_bytes = 0;
  for (const auto& op : p.ops) {
    const std::string& n = p.name(op);
    if (op.phase == workload::Phase::Forward && n.rfind("core_attention_ring", 0) == 0) ++fwd_steps;
    if (op.phase == workload::Phase::Forward && n == "cp_kv_ring_exchange") {
      ++fwd_exchanges;
      fwd_bytes += op.bytes;
    }
    if (n == "cp_dkv_ring_exchange") dkv_bytes += op.bytes;
  }
  EXPECT_EQ(fwd_steps, 16);
  EXPECT_EQ(fwd_exchanges, 15);
  EXPECT_EQ(fwd_bytes, 60 * block);  // the 15 later groups of 4 blocks (the first group's 3 others ride with it)
  EXPECT_EQ(dkv_bytes, 64 * block);  // every dK/dV goes home
}

TEST(ContextParallel, AllGatherAndUlyssesVolumes) {
  const uint64_t tokens = 4096 / 4;
  const workload::Workload ag = workload::build_megatron_workload(test::job_from_yaml(cp_job("all_gather")));
  const report::CommBytes a = report::comm_bytes(ag, 0);
  EXPECT_EQ(a.calls[report::kCp], uint64_t(8 * 3));  // all-gather forward and backward, reduce-scatter of dK/dV
  // Ulysses: Q (16 x 64) + K/V (2 x 4 x 64) to head shards and the output (16 x 64) back, the same in backward.
  const workload::Workload u = workload::build_megatron_workload(test::job_from_yaml(cp_job("a2a")));
  const report::CommBytes c = report::comm_bytes(u, 0);
  EXPECT_EQ(c.calls[report::kCp], uint64_t(8 * 4));
  const double per_layer = 2.0 * tokens * ((1024 + 512) + 1024) * 2;
  EXPECT_NEAR(double(c.message[report::kCp]), 8 * per_layer, 0.5);
  // Ulysses attends over the whole sequence (its heads / c): the kernel walks all 4096 keys.
  for (const auto& op : u.programs[0].ops) {
    if (op.category == workload::ComputeCategory::Attention && op.kind == workload::OpKind::Compute) {
      EXPECT_EQ(op.gemm_n, 4096) << u.programs[0].name(op);
    }
  }
}

TEST(ContextParallel, UlyssesNeedsHeadsDivisibleByTensorTimesContext) {
  std::string yaml = cp_job("a2a");
  yaml.replace(yaml.find("context: 4"), 10, "context: 8");
  yaml.replace(yaml.find("num_gpus: 4, gpus_per_node: 4"), 29, "num_gpus: 8, gpus_per_node: 8");
  const std::string err = test::job_error(yaml);
  EXPECT_NE(err.find("parallelism.cp_comm_type"), std::string::npos) << err;
  EXPECT_NO_THROW(test::job_from_yaml(cp_job("p2p")));
}

// Hierarchical context parallelism (cp_comm_type a2a+p2p, Megatron's --hierarchical-context-parallel-sizes 2 2): Ulysses
// within the pairs of adjacent CP ranks {0,1} {2,3}, then ring attention between the pairs' members {0,2} {1,3}: each
// rank attends with heads / 2 over 2 x s/c = 2,048 tokens per ring step, 2 ring steps.
TEST(ContextParallel, HierarchicalUlyssesThenRing) {
  std::string yaml = cp_job("a2a+p2p");
  yaml.replace(yaml.find("cp_comm_type"), 12, "hierarchical_context_parallel_sizes: [2, 2], cp_comm_type");
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
  using workload::GroupKind;
  const auto& l = w.layout;
  EXPECT_EQ(l.group_size(GroupKind::HcpA2a), 2);
  EXPECT_EQ(l.group_size(GroupKind::HcpRing), 2);
  EXPECT_EQ(l.member(GroupKind::HcpA2a, l.group_id(GroupKind::HcpA2a, 3), 0), 2);
  EXPECT_EQ(l.member(GroupKind::HcpA2a, l.group_id(GroupKind::HcpA2a, 3), 1), 3);
  EXPECT_EQ(l.member(GroupKind::HcpRing, l.group_id(GroupKind::HcpRing, 3), 0), 1);
  EXPECT_EQ(l.member(GroupKind::HcpRing, l.group_id(GroupKind::HcpRing, 3), 1), 3);
  for (int r = 0; r < l.world(); ++r) {
    for (GroupKind g : {GroupKind::HcpA2a, GroupKind::HcpRing}) {
      EXPECT_EQ(l.member(g, l.group_id(g, r), l.index_in_group(g, r)), r);
    }
  }
  // cp, its two levels, the DP-with-CP group (c x d = 4) and the expert-DP group (the same ranks, counted as §8 counts
  // every group kind of more than one rank): one communicator each.
  EXPECT_EQ(l.communicators(), 5);
  const workload::Program& p = w.programs[0];
  const uint64_t tokens = 4096 / 4, block = 2ull * tokens * (2 * 4 * 64);
  std::map<std::string, int> calls;
  for (const auto& op : p.ops) {
    const std::string& n = p.name(op);
    if (op.kind == workload::OpKind::Collective) {
      ++calls[n];
      if (n.rfind("cp_kv", 0) == 0 || n.rfind("cp_dkv", 0) == 0) {
        EXPECT_EQ(op.group, GroupKind::HcpRing) << n;
        EXPECT_EQ(op.bytes, block) << n;  // a x the tokens with heads / a: the same K/V bytes
      } else if (n.rfind("cp_", 0) == 0) {
        EXPECT_EQ(op.group, GroupKind::HcpA2a) << n;
        EXPECT_EQ(op.coll, workload::CollType::AllToAll) << n;
      }
    }
    if (op.category == workload::ComputeCategory::Attention && op.kind == workload::OpKind::Compute) {
      ++calls[n];
      EXPECT_EQ(op.gemm_n, 2 * 4096 / 4) << n;
    }
  }
  // Per layer and micro-batch (4 x 2 = 8): all-to-alls of Q/K/V and of the output, forward and backward; a ring of 2:
  // one K/V pass and 2 steps forward, one K/V pass, 2 steps and 2 dK/dV passes backward.
  EXPECT_EQ(calls["cp_qkv_all_to_all"], 8);
  EXPECT_EQ(calls["cp_out_all_to_all"], 8);
  EXPECT_EQ(calls["cp_out_grad_all_to_all"], 8);
  EXPECT_EQ(calls["cp_qkv_grad_all_to_all"], 8);
  EXPECT_EQ(calls["cp_kv_ring_exchange"], 8 * 2);
  EXPECT_EQ(calls["cp_dkv_ring_exchange"], 8 * 2);
  EXPECT_EQ(calls["core_attention_ring_local"] + calls["core_attention_ring_step"], 8 * 2);
  EXPECT_EQ(calls["core_attention_ring_bwd"], 8 * 2);
  const report::CommBytes cb = report::comm_bytes(w, 0);
  EXPECT_EQ(cb.calls[report::kCp], uint64_t(8 * 8));  // counted as context-parallel communication
  EXPECT_GT(sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(yaml), {}).result.step_ns, 0);

  // Refused with the key: sizes whose product is not the context size, sizes without a2a+p2p, a2a+p2p without
  // sizes, an all-to-all group that does not divide the K/V heads (4 groups over 8 ranks).
  std::string bad = yaml;
  bad.replace(bad.find("[2, 2]"), 6, "[2, 4]");
  EXPECT_NE(test::job_error(bad).find("parallelism.hierarchical_context_parallel_sizes: a2a+p2p needs two sizes"),
            std::string::npos) << test::job_error(bad);
  std::string no_type = cp_job("p2p");
  no_type.replace(no_type.find("cp_comm_type"), 12, "hierarchical_context_parallel_sizes: [2, 2], cp_comm_type");
  EXPECT_NE(test::job_error(no_type).find("applies only to cp_comm_type a2a+p2p"), std::string::npos);
  EXPECT_NE(test::job_error(cp_job("a2a+p2p")).find("parallelism.hierarchical_context_parallel_sizes"), std::string::npos);
  std::string wide = yaml;
  wide.replace(wide.find("[2, 2]"), 6, "[4, 1]");
  wide.replace(wide.find("num_query_groups: 4"), 19, "num_query_groups: 2");
  EXPECT_NE(test::job_error(wide).find("divide the attention heads 16 and the K/V heads 2"), std::string::npos)
      << test::job_error(wide);
}

}  // namespace
}  // namespace stepsim
