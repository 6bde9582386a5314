// MoE token dispatchers and the shared-expert overlap (issue 13 items 1c/1h; Megatron-Core's
// --moe-token-dispatcher-type allgather | alltoall | flex and --moe-shared-expert-overlap). Bytes by hand from the job.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>

#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/io/csv_table.hpp"
#include "stepsim/catalog/efficiency_table.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/report/breakdown.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/megatron_args.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

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
         cluster_extra + "}\n"
         "simulation: {host_time_scale: 0}\n";  // host issue model off: this small layer would be host-bound
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

TEST(MoeDispatcher, FlexPermutesWhatItReceivedAlltoallSortsItByLocalExpert) {
  const auto a2a = forward_ops(job(""));
  const auto flex = forward_ops(job(", token_dispatcher: flex"));
  // DeepEP sends a token once per destination rank: 2 ranks of 4 experts, top 2, a rank missed with C(4,2)/C(8,2) =
  // 6/28, so 2 x 22/28 = 11/7 copies per token instead of 2 (tests/test_moe_routing.cpp has the general case).
  EXPECT_EQ(a2a.at("moe_dispatch_all_to_all"), 2 * 1024 * 1024 * 2u);
  EXPECT_EQ(flex.at("moe_dispatch_all_to_all"), static_cast<uint64_t>(std::llround(1024 * 1024 * 2 * 11.0 / 7)));
  EXPECT_EQ(flex.at("moe_combine_all_to_all"), flex.at("moe_dispatch_all_to_all"));
  // Read and write the 2,048 routed copies: before the all-to-all (alltoall), after it (flex: DeepEP's receiver).
  EXPECT_EQ(a2a.at("token_permute"), 2 * 2048 * 1024 * 2u);
  EXPECT_EQ(flex.at("token_permute"), 2 * 2048 * 1024 * 2u);
  EXPECT_EQ(flex.at("token_unpermute"), 2 * 2048 * 1024 * 2u);
  // 8 experts on EP 2: four per rank, so the alltoall dispatcher sorts the received rows by local expert and back
  // (a copy of the 2,048 rows each way); flex's permutation already orders them.
  EXPECT_EQ(a2a.at("tokens_sort_chunks"), 2 * 2048 * 1024 * 2u);
  EXPECT_EQ(a2a.at("tokens_unsort_chunks"), 2 * 2048 * 1024 * 2u);
  EXPECT_EQ(flex.count("tokens_sort_chunks"), 0u);
  // One expert per rank (2 experts on EP 2): nothing to sort.
  std::string one = job("");
  one.replace(one.find("num_experts: 8"), 14, "num_experts: 2");
  EXPECT_EQ(forward_ops(one).count("tokens_sort_chunks"), 0u);
}

// --moe-permute-fusion off (Megatron-LM's default): the unpermute and the permute's backward are atomic scatter-adds
// at data/efficiency.yaml's scatter_add fraction (0.15 of the H100's 3.35 TB/s), the unpermute's backward three passes.
TEST(MoeDispatcher, UnfusedPermuteScattersWithAtomics) {
  auto ops_of = [](const std::string& yaml) {
    const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
    const workload::Program& p = w.programs[0];
    std::map<std::string, workload::Op> r;
    for (const auto& op : p.ops)
      if (op.layer == 0 && op.microbatch == 0) r.emplace(p.name(op), op);
    return r;
  };
  const auto fused = ops_of(job(""));
  const auto unfused = ops_of(job(", permute_fusion: false"));
  const uint64_t rows = 2 * 2048 * 1024 * 2u;  // read and write 2,048 routed copies of 1,024 bf16
  for (const char* n : {"token_unpermute", "token_permute_bwd"}) {
    EXPECT_EQ(unfused.at(n).category, workload::ComputeCategory::ScatterAdd) << n;
    EXPECT_EQ(unfused.at(n).bytes, rows) << n;
    EXPECT_EQ(fused.at(n).category, workload::ComputeCategory::Elementwise) << n;
  }
  EXPECT_EQ(unfused.at("token_unpermute_bwd").bytes, 3 * rows);
  EXPECT_EQ(fused.at("token_unpermute_bwd").bytes, rows);
  EXPECT_EQ(unfused.at("token_permute").bytes, rows);
  const hw::GpuSpec& h100 = stepsim::catalog::shipped().gpus.find("H100-SXM");
  const auto model = cost::make_roofline_model(h100, spec::Precision::Bf16,
                                               stepsim::catalog::shipped().efficiency.resolve(h100));
  // 8 MiB / (3.35 TB/s x 0.15) = 16.69 us, after the eager launch gap
  const double gap_ns = stepsim::catalog::shipped().efficiency.resolve(h100).launch_gap_us * 1e3;
  EXPECT_NEAR(static_cast<double>(model->duration_ns(unfused.at("token_unpermute"))) - gap_ns,
              8388608 / (3.35e12 * 0.15) * 1e9, 20);
  const YAML::Node m = spec::megatron_args_to_job_node(
      "--num-layers 2 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8 --num-experts 4 --moe-router-topk 2 --expert-model-parallel-size 1");
  EXPECT_FALSE(m["model"]["moe"]["permute_fusion"].as<bool>());  // Megatron-LM's default
  const YAML::Node f = spec::megatron_args_to_job_node(
      "--num-layers 2 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 --micro-batch-size 1 "
      "--global-batch-size 8 --num-experts 4 --moe-router-topk 2 --expert-model-parallel-size 1 --moe-permute-fusion");
  EXPECT_TRUE(f["model"]["moe"]["permute_fusion"].as<bool>());
}

// The unfused permute and unpermute, forward and backward, against the same kernels measured on an H100 at one EP
// rank's share of Qwen3-30B-A3B (mbs 1 and 4), Mixtral 8x7B and DeepSeek-V3 (data/measurements/h100-sxm/moe_ops.csv,
// bench/gpu/measure_moe.py): the four together within 12 % (the model before the scatter_add class: 3.4x too fast).
TEST(MoeDispatcher, UnfusedPermuteFollowsTheH100Measurements) {
  std::ifstream in(hw::data_dir() + "/measurements/h100-sxm/moe_ops.csv");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto csv = cost::parse_csv(text, "measurements");
  const int cc = csv.column("case"), co = csv.column("op"), cf = csv.column("fwd_us"), cb = csv.column("fwd_bwd_us");
  ASSERT_TRUE(cc >= 0 && co >= 0 && cf >= 0 && cb >= 0);
  std::map<std::string, double> measured;  // case -> permute + unpermute, forward + backward, seconds
  for (const auto& r : csv.rows)
    if (r.fields[co] == "permute_rows" || r.fields[co] == "unpermute") measured[r.fields[cc]] += std::stod(r.fields[cb]) * 1e-6;
  // case -> hidden, experts, EP, top-k, expert FFN, tokens per rank
  const std::map<std::string, std::array<int, 6>> cases = {{"qwen3-30b-a3b-ep8-mbs1", {2048, 128, 8, 8, 768, 4096}},
                                                           {"qwen3-30b-a3b-ep8-mbs4", {2048, 128, 8, 8, 768, 16384}},
                                                           {"mixtral-8x7b-ep8", {4096, 8, 8, 2, 14336, 4096}},
                                                           {"deepseek-v3-ep64", {7168, 256, 64, 8, 2048, 4096}}};
  const hw::GpuSpec& h100 = stepsim::catalog::shipped().gpus.find("H100-SXM");
  cost::EfficiencyTable table = stepsim::catalog::shipped().efficiency.resolve(h100);
  table.launch_gap_us = 0;  // measured as CUDA-graph replays
  const auto model = cost::make_roofline_model(h100, spec::Precision::Bf16, table);
  ASSERT_EQ(measured.size(), cases.size());
  for (const auto& [name, c] : cases) {
    const auto [h, E, ep, k, ffn, T] = c;
    const std::string y =
        "model: {name: m, num_layers: 1, hidden_size: " + std::to_string(h) + ", num_attention_heads: " +
        std::to_string(h / 128) + ", ffn_hidden_size: " + std::to_string(4 * h) + ", activation: swiglu, vocab_size: 32000,"
        " seq_length: " + std::to_string(T) + ", moe: {num_experts: " + std::to_string(E) + ", topk: " + std::to_string(k) +
        ", ffn_hidden_size: " + std::to_string(ffn) + ", permute_fusion: false}}\n"
        "parallelism: {expert: " + std::to_string(ep) + "}\ntraining: {micro_batch_size: 1, global_batch_size: " +
        std::to_string(ep) + "}\ncluster: {gpu: H100-SXM, num_gpus: " + std::to_string(ep) + ", gpus_per_node: 8}\n";
    const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(y));
    const workload::Program& p = w.programs[0];
    double model_s = 0;
    int n = 0;
    for (const auto& op : p.ops) {
      const std::string& on = p.name(op);
      if (op.layer == 0 && op.microbatch == 0 &&
          (on == "token_permute" || on == "token_permute_bwd" || on == "token_unpermute" || on == "token_unpermute_bwd")) {
        model_s += static_cast<double>(model->duration_ns(op)) * 1e-9;
        ++n;
      }
    }
    EXPECT_EQ(n, 4) << name;
    EXPECT_NEAR(model_s / measured.at(name), 1.0, 0.12) << name << ": model " << model_s << " s, measured " << measured.at(name);
  }
}

TEST(MoeDispatcher, SharedExpertOverlapRunsBesideTheDispatch) {
  // A slow (10 Gb/s) link between the two EP ranks: the all-to-alls take far longer than the shared expert.
  const std::string shared = ", shared_expert_ffn_hidden_size: 2048";
  const std::string slow = ", gpus_per_node: 1, inter_node: {bandwidth_Gbps: 10, latency_us: 5}";
  auto run = [&](const std::string& extra) {
    std::string y = job(shared + extra);
    y.replace(y.find(", gpus_per_node: 2"), 18, slow);
    return sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(y), {0});
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
  const sim::Simulation even = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(job("")), {0});
  const sim::Simulation hot = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(job(", routing_imbalance: 2")), {0});
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
