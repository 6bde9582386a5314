// MoE token dispatchers and the shared-expert overlap (issue 13 items 1c/1h; Megatron-Core's
// --moe-token-dispatcher-type allgather | alltoall | flex and --moe-shared-expert-overlap). Bytes by hand from the job.
#include <gtest/gtest.h>

#include <map>

#include "stepsim/report/breakdown.hpp"
#include "stepsim/sim/simulation.hpp"
#include "stepsim/spec/input_error.hpp"
#include "stepsim/spec/megatron_args.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

constexpr uint64_t MiB = 1 << 20;

// One MoE layer, h 1024, s 1024, b 1, 8 experts of FFN 512, top 2; TP t (with SP, expert TP = t) x EP 2.
std::string job(const std::string& moe_extra, int tp = 1, const std::string& cluster_extra = "") {
  const int gpus = 2 * tp;
  return "model: {name: m, num_layers: 1, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
         " activation: swiglu, vocab_size: 32000, seq_length: 1024,"
         " moe: {num_experts: 8, topk: 2, ffn_hidden_size: 512" + moe_extra + "}}\n"
         "parallelism: {tensor: " + std::to_string(tp) + ", expert: 2, sequence_parallel: " + (tp > 1 ? "true" : "false") +
         "}\ntraining: {micro_batch_size: 1, global_batch_size: 2}\n"
         "cluster: {gpu: H100-SXM, num_gpus: " + std::to_string(gpus) + ", gpus_per_node: " + std::to_string(gpus) +
         cluster_extra + "}\n";
}

// Forward ops of layer 0, micro-batch 0, by name: message bytes of collectives, HBM bytes of compute ops.
std::map<std::string, uint64_t> forward_ops(const std::string& yaml) {
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
  const workload::Program& p = w.programs[0];
  std::map<std::string, uint64_t> r;
  for (const auto& op : p.ops)
    if (op.layer == 0 && op.microbatch == 0 && op.phase == workload::Phase::Forward) r[p.name(op)] += op.bytes;
  return r;
}

TEST(MoeDispatcher, AllGatherGathersTheExpertGroupsTokens) {
  const auto ops = forward_ops(job(", token_dispatcher: allgather"));
  // Every token of the 2 EP ranks: 2 x 1024 tokens x 1024 x 2 B = 4 MiB gathered, and reduce-scattered back.
  EXPECT_EQ(ops.at("moe_dispatch_all_gather"), 4 * MiB);
  EXPECT_EQ(ops.at("moe_combine_reduce_scatter"), 4 * MiB);
  EXPECT_EQ(ops.count("moe_dispatch_all_to_all"), 0u);
  // The local experts' 2 x 1024 routed copies picked out of the 2,048 gathered tokens: (2048 + 2048) x 1024 x 2 B.
  EXPECT_EQ(ops.at("token_permute"), 8 * MiB);
  // Same expert work as the all-to-all dispatcher.
  EXPECT_EQ(ops.at("expert_fc1"), forward_ops(job("")).at("expert_fc1"));
}

TEST(MoeDispatcher, AllGatherOverTensorAndExpertRanksHasOneGathersVolume) {
  // TP 2 x EP 2: a TP stage (1 MiB -> 2 MiB) then EP (2 MiB -> 4 MiB): bus volume 2 MiB x 1/2 + 4 MiB x 1/2 = 3 MiB,
  // as one all-gather of 4 MiB over 4 ranks (3/4 x 4 MiB).
  const workload::Workload w =
      workload::build_megatron_workload(test::job_from_yaml(job(", token_dispatcher: allgather", 2)));
  const workload::Program& p = w.programs[0];
  double bus = 0;
  for (const auto& op : p.ops) {
    if (op.layer != 0 || op.microbatch != 0 || op.phase != workload::Phase::Forward) continue;
    const std::string& n = p.name(op);
    if (n == "moe_tp_all_gather" || n == "moe_dispatch_all_gather") bus += double(op.bytes) / 2.0;
  }
  EXPECT_DOUBLE_EQ(bus, 3.0 * MiB);
}

TEST(MoeDispatcher, FlexFusesThePermutationIntoTheAllToAll) {
  const auto a2a = forward_ops(job(""));
  const auto flex = forward_ops(job(", token_dispatcher: flex"));
  EXPECT_EQ(flex.at("moe_dispatch_all_to_all"), a2a.at("moe_dispatch_all_to_all"));
  EXPECT_EQ(flex.at("moe_combine_all_to_all"), a2a.at("moe_combine_all_to_all"));
  EXPECT_EQ(flex.count("token_permute"), 0u);
  EXPECT_EQ(flex.count("token_unpermute"), 0u);
  EXPECT_EQ(a2a.at("token_permute"), 2 * 2048 * 1024 * 2u);  // read and write the 2,048 routed copies
}

TEST(MoeDispatcher, SharedExpertOverlapRunsBesideTheDispatch) {
  // A slow (10 Gb/s) link between the two EP ranks: the all-to-alls take far longer than the shared expert.
  const std::string shared = ", shared_expert_ffn_hidden_size: 2048";
  const std::string slow = ", gpus_per_node: 1, inter_node: {bandwidth_Gbps: 10, latency_us: 5}";
  auto run = [&](const std::string& extra) {
    std::string y = job(shared + extra);
    y.replace(y.find(", gpus_per_node: 2"), 18, slow);
    return sim::run_simulation(test::job_from_yaml(y), {0});
  };
  const sim::Simulation off = run("");
  const sim::Simulation on = run(", shared_expert_overlap: true");
  auto find = [](const sim::Simulation& s, const std::string& name) {
    const workload::Program& p = s.workload.programs[0];
    for (const sim::OpRecord& r : s.result.recorded.at(0).ops) {
      const workload::Op& op = p.ops[r.op];
      if (op.layer == 0 && op.phase == workload::Phase::Forward && p.name(op) == name) return r;
    }
    ADD_FAILURE() << name;
    return sim::OpRecord{};
  };
  // Without the overlap the shared expert starts after the combine; with it, while the dispatch is still moving.
  EXPECT_GE(find(off, "shared_expert_fc1").begin_ns, find(off, "moe_combine_all_to_all").end_ns);
  EXPECT_LT(find(on, "shared_expert_fc1").begin_ns, find(on, "moe_dispatch_all_to_all").end_ns);
  EXPECT_LT(find(on, "shared_expert_fc2").begin_ns, find(on, "moe_combine_all_to_all").end_ns);
  EXPECT_LT(on.result.step_ns, off.result.step_ns);
}

TEST(MoeDispatcher, BadSettingsNameTheKey) {
  std::string e = test::job_error(job(", token_dispatcher: alltoallv"));
  EXPECT_NE(e.find("model.moe.token_dispatcher"), std::string::npos) << e;
  e = test::job_error(job(", shared_expert_overlap: true"));
  EXPECT_NE(e.find("model.moe.shared_expert_overlap"), std::string::npos) << e;
  EXPECT_NE(e.find("shared expert"), std::string::npos) << e;
  e = test::job_error(job(", shared_expert_ffn_hidden_size: 2048, shared_expert_overlap: true, token_dispatcher: allgather"));
  EXPECT_NE(e.find("alltoall or flex"), std::string::npos) << e;
}

TEST(MoeDispatcher, MegatronArgsDefaultToMegatronsAllGather) {
  const std::string base =
      "--num-layers 2 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8 --num-experts 4 --moe-router-topk 2 --expert-model-parallel-size 1 ";
  EXPECT_EQ(spec::megatron_args_to_job_node(base)["model"]["moe"]["token_dispatcher"].as<std::string>(), "allgather");
  const YAML::Node j = spec::megatron_args_to_job_node(
      base + "--moe-token-dispatcher-type alltoall --moe-shared-expert-intermediate-size 512 --moe-shared-expert-overlap");
  EXPECT_EQ(j["model"]["moe"]["token_dispatcher"].as<std::string>(), "alltoall");
  EXPECT_TRUE(j["model"]["moe"]["shared_expert_overlap"].as<bool>());
  EXPECT_THROW(spec::megatron_args_to_job_node(base + "--moe-token-dispatcher-type alltoall_seq"), InputError);
}

// Load on the busiest expert-parallel rank (issue 13 item 1c): balanced routing by default; routing_imbalance r scales
// the tokens its experts process and its all-to-alls; a capacity factor c caps them (min(r, c): over-capacity tokens
// are dropped) unless buffers are padded to it (c). Balanced: 2 x 1024 routed copies x 1024 x 2 B = 4 MiB dispatched.
TEST(MoeLoad, ImbalanceScalesTheBusiestRankCapacityCapsIt) {
  auto bytes = [](const std::string& moe) {
    const auto ops = forward_ops(job(moe));
    return std::make_pair(ops.at("moe_dispatch_all_to_all"), ops.at("expert_fc1"));
  };
  const auto [a2a, fc1] = bytes("");
  EXPECT_EQ(a2a, 4 * MiB);
  const auto skew = bytes(", routing_imbalance: 1.5");
  EXPECT_EQ(skew.first, 6 * MiB);
  EXPECT_GT(skew.second, fc1);  // more tokens through the same weights
  EXPECT_EQ(bytes(", routing_imbalance: 1.5, capacity_factor: 1.25").first, 5 * MiB);   // capped at capacity
  EXPECT_EQ(bytes(", capacity_factor: 1.25").first, 4 * MiB);                           // balanced: nothing dropped
  EXPECT_EQ(bytes(", capacity_factor: 1.25, pad_to_capacity: true").first, 5 * MiB);   // padded to capacity
  const sim::Simulation even = sim::run_simulation(test::job_from_yaml(job("")), {0});
  const sim::Simulation hot = sim::run_simulation(test::job_from_yaml(job(", routing_imbalance: 2")), {0});
  EXPECT_GT(hot.result.step_ns, even.result.step_ns);
  EXPECT_NE(test::job_error(job(", routing_imbalance: 0.5")).find("moe.routing_imbalance"), std::string::npos);
  EXPECT_NE(test::job_error(job(", pad_to_capacity: true")).find("moe.pad_to_capacity: needs moe.capacity_factor"),
            std::string::npos);
  const YAML::Node m = spec::megatron_args_to_job_node(
      "--num-layers 2 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8 --num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 2 "
      "--moe-expert-capacity-factor 1.25 --moe-pad-expert-input-to-capacity");
  EXPECT_TRUE(m["model"]["moe"]["pad_to_capacity"].as<bool>());
}

}  // namespace
}  // namespace stepsim
