// comm_model: flow in whole jobs: the engine hands every collective and send/recv to one FlowContendedNetwork,
// so transfers of different parallel groups that cross the same link share it. Hand-computed cases on the
// seam, the equality with the flow model timing one collective alone, and the job path from the CLI.
#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/cost/collective/flow_collectives.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/topology/topology.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/flow_contended_network.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::sim {
namespace {

using workload::CollType;
constexpr int64_t ms = 1'000'000;
using test::GB;

// 2 nodes x 8 GPUs, no latency anywhere, `nics` NICs per node of 50 GB/s each.
spec::ClusterSpec two_nodes(int nics) {
  spec::ClusterSpec c;
  c.num_gpus = 16;
  c.intra_node = {450.0, 0.0, ""};
  c.inter_node = {50.0, 0.0, "fat-tree"};
  c.network.nics_per_node = nics;
  c.network.nic_GBps = 50.0;
  c.network.hop_latency_us = 0.0;
  return c;
}

// Runs the network until it is idle; returns (tag, time) in completion order.
std::vector<std::pair<uint64_t, int64_t>> drain(FlowContendedNetwork& net) {
  std::vector<std::pair<uint64_t, int64_t>> out;
  std::vector<uint64_t> done;
  for (int64_t t = net.next_event_ns(); t != INT64_MAX; t = net.next_event_ns()) {
    done.clear();
    net.advance(t, done);
    for (uint64_t tag : done) out.push_back({tag, t});
  }
  return out;
}

TEST(FlowEngine, RingExchangeMovesEachMembersBlockOnce) {
  // Context parallelism's K/V ring step: ranks {0, 8} (one per node) each send 1 GB to the other. One NIC of
  // 50 GB/s per node, no latency: each direction carries 1 GB, 20 ms. Inside one node (ranks {0, 1}) over
  // 450 GB/s NVLink: 1 GB / 450 GB/s = 2.222 ms (one ring, one direction per member), although both GPUs share
  // the node's one NIC: a NIC never bridges two GPUs of its node (issue 14 item 3).
  using Pairs = std::vector<std::pair<uint64_t, int64_t>>;
  FlowContendedNetwork across(hw::build_topology(two_nodes(1)));
  across.start_collective(1, CollType::SendRecv, 1'000'000'000, std::vector<int>{0, 8}, 0);
  EXPECT_EQ(drain(across), (Pairs{{1, 20 * ms}}));
  FlowContendedNetwork inside(hw::build_topology(two_nodes(1)));
  inside.start_collective(2, CollType::SendRecv, 1'000'000'000, std::vector<int>{0, 1}, 0);
  const Pairs in = drain(inside);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_NEAR(static_cast<double>(in[0].second), 1e9 / (450 * GB) * 1e9, 2.0);
}

TEST(FlowEngine, IntraNodeTrafficNeverEntersANic) {
  // An all-gather over the 8 GPUs of one NVSwitch node takes the same time whatever the node's NIC count
  // (issue 14 item 3: with 1, 2 or 4 NICs it used to go GPU -> NIC -> GPU where two GPUs share a NIC).
  using Pairs = std::vector<std::pair<uint64_t, int64_t>>;
  std::vector<int64_t> t;
  for (int nics : {1, 2, 4, 8}) {
    FlowContendedNetwork net(hw::build_topology(two_nodes(nics)));
    net.start_collective(1, CollType::AllGather, 8'000'000'000, std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, 0);
    const Pairs done = drain(net);
    ASSERT_EQ(done.size(), 1u);
    t.push_back(done[0].second);
  }
  // Every GPU sends 7/8 x 8 GB = 7 GB through its one 450 GB/s link to the NVSwitch: 15.556 ms.
  for (int64_t x : t) EXPECT_NEAR(static_cast<double>(x), 7e9 / (450 * GB) * 1e9, 1e3) << x;
}

TEST(FlowEngine, TwoDataParallelRingsOnOneNicShareIt) {
  // All-reduce of 1 GB over ranks {0, 8} (one per node): a 2-rank ring sends S/2 each way in its
  // reduce-scatter step and S/2 in its all-gather step, so each NIC direction carries S = 1 GB: 20 ms at
  // 50 GB/s alone. A second ring {1, 9} at the same time on the same (single) NIC: 2 GB per direction, 40 ms.
  using Pairs = std::vector<std::pair<uint64_t, int64_t>>;
  FlowContendedNetwork alone(hw::build_topology(two_nodes(1)));
  alone.start_collective(1, CollType::AllReduce, 1'000'000'000, std::vector<int>{0, 8}, 0);
  EXPECT_EQ(drain(alone), (Pairs{{1, 20 * ms}}));

  FlowContendedNetwork shared(hw::build_topology(two_nodes(1)));
  shared.start_collective(1, CollType::AllReduce, 1'000'000'000, std::vector<int>{0, 8}, 0);
  shared.start_collective(2, CollType::AllReduce, 1'000'000'000, std::vector<int>{1, 9}, 0);
  EXPECT_EQ(drain(shared), (Pairs{{1, 40 * ms}, {2, 40 * ms}}));

  // Two NICs per node: GPU g uses NIC floor(2g/8), so GPUs 0 and 4 have one each and the rings do not meet.
  FlowContendedNetwork apart(hw::build_topology(two_nodes(2)));
  apart.start_collective(1, CollType::AllReduce, 1'000'000'000, std::vector<int>{0, 8}, 0);
  apart.start_collective(2, CollType::AllReduce, 1'000'000'000, std::vector<int>{4, 12}, 0);
  EXPECT_EQ(drain(apart), (Pairs{{1, 20 * ms}, {2, 20 * ms}}));
}

TEST(FlowEngine, PipelineSendSharesTheNicWithADataParallelRing) {
  // Ring {0, 8} as above, and at t = 10 ms a 0.25 GB send 1 -> 9 on the same NIC. Until 10 ms the ring runs
  // at 50 GB/s (its first step, 0.5 GB per direction, is done); then node 0's NIC up-link is shared, 25 GB/s
  // each: the send needs 0.25 / 25 = 10 ms (ends at 20 ms), the ring's 0 -> 8 half moves 0.25 GB meanwhile
  // and its last 0.25 GB alone at 50 GB/s takes 5 ms: 25 ms (a ring step ends when its slowest flow does).
  using Pairs = std::vector<std::pair<uint64_t, int64_t>>;
  FlowContendedNetwork net(hw::build_topology(two_nodes(1)));
  net.start_collective(1, CollType::AllReduce, 1'000'000'000, std::vector<int>{0, 8}, 0);
  std::vector<uint64_t> done;
  net.advance(10 * ms, done);
  EXPECT_TRUE(done.empty());
  net.start_p2p(2, 1, 9, 250'000'000, 10 * ms);
  EXPECT_EQ(drain(net), (Pairs{{2, 20 * ms}, {1, 25 * ms}}));
}

TEST(FlowEngine, OneCollectiveAloneTakesWhatTheFlowModelSays) {
  // The job path (FlowContendedNetwork over explicit ranks) and stepsim comm's path (FlowCollectiveModel over
  // a geometry) build the same phases for the same placement: 32 GPUs on 4 nodes, ring all-reduce and
  // all-gather, and a tree all-reduce below 1 MiB.
  spec::ClusterSpec c;
  c.num_gpus = 32;
  const cost::FlowCollectiveModel model(c);
  std::vector<int> ranks(32);
  for (int i = 0; i < 32; ++i) ranks[i] = i;
  for (auto [coll, bytes] : {std::pair{CollType::AllReduce, uint64_t{256} << 20},
                             std::pair{CollType::AllGather, uint64_t{64} << 20},
                             std::pair{CollType::AllReduce, uint64_t{256} << 10}}) {
    FlowContendedNetwork net(hw::build_topology(c));
    net.start_collective(7, coll, bytes, ranks, 1000);
    const auto done = drain(net);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].second - 1000, model.collective_ns(coll, bytes, {32, 4, 8})) << workload::name_of(coll) << " " << bytes;
  }
  // A send across nodes, likewise.
  FlowContendedNetwork net(hw::build_topology(c));
  net.start_p2p(3, 0, 8, 64 << 20, 0);
  EXPECT_EQ(drain(net).at(0).second, model.p2p_ns(64 << 20, false));
}

// TP 2, DP 4, PP 2 on nodes of 4 GPUs: the DP groups of a stage span two nodes and, with one NIC per node,
// share it.
spec::JobSpec job_with(const std::string& comm_model, int nics) {
  spec::JobSpec job = test::job_from_yaml(test::small_gpt_yaml(2, 2, 4, 32, "", "", ", comm_model: " + comm_model));
  job.cluster.gpus_per_node = 4;
  job.cluster.network.nics_per_node = nics;
  job.cluster.network.nic_GBps = 4 * 50.0 / nics;  // the node's NIC total stays 200 GB/s
  return job;
}

TEST(FlowEngine, ContentionOnlyAppearsWhereGroupsShareLinks) {
  // The plain engine with the flow model times every transfer alone; the contended network cannot be faster.
  // With one NIC per node the two DP rings of a stage ({0,2,4,6}, {1,3,5,7} span nodes 0-1) cross it
  // together and the step is strictly longer than with every transfer alone.
  for (int nics : {1, 4}) {
    const spec::JobSpec job = job_with("flow", nics);
    const int64_t contended = run_simulation(stepsim::catalog::shipped(), job, {0}).result.step_ns;
    workload::Workload w = workload::build_megatron_workload(job);
    const auto compute =
        cost::make_roofline_model(stepsim::catalog::shipped().gpus.find(job.cluster.gpu), job.training.precision, test::shipped_efficiency(job.cluster.gpu));
    assign_compute_durations(w, *compute);
    const auto flow_alone = make_collective_model(stepsim::catalog::shipped(), job);
    const int64_t alone = simulate(w, *flow_alone, EngineOptions{}).step_ns;
    if (nics == 1) {
      EXPECT_GT(contended, alone) << "one NIC per node";
    } else {
      EXPECT_GE(contended, alone) << "one NIC per GPU";
    }
  }
}

TEST(FlowEngine, RunsAreBitIdentical) {
  const spec::JobSpec job = job_with("flow", 1);
  const auto a = run_simulation(stepsim::catalog::shipped(), job, {0, 15});
  const auto b = run_simulation(stepsim::catalog::shipped(), job, {0, 15});
  EXPECT_EQ(a.result.step_ns, b.result.step_ns);
  ASSERT_EQ(a.result.recorded.size(), b.result.recorded.size());
  for (size_t r = 0; r < a.result.recorded.size(); ++r) {
    ASSERT_EQ(a.result.recorded[r].ops.size(), b.result.recorded[r].ops.size());
    for (size_t i = 0; i < a.result.recorded[r].ops.size(); ++i)
      EXPECT_EQ(a.result.recorded[r].ops[i].end_ns, b.result.recorded[r].ops[i].end_ns);
  }
}

TEST(FlowEngine, SimulateFromTheCli) {
  const std::string root = test::source_dir();
  const std::string out = test::temp_dir() + "flow.json";
  const auto r = test::run_cli("simulate " + root + "/examples/gpt3-175b-h800.yaml --set simulation.comm_model=flow --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("comm_model flow"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(test::read_file(out));
  EXPECT_EQ(j["simulation"]["comm_model"], "flow");
  EXPECT_GT(j["step_time_s"].get<double>(), 0.0);
  // A transfer the flow network cannot carry is an input error naming the key, exit 2: on a photonic fabric
  // with one port per node, the DP ring over 4 single-GPU nodes needs two circuits at every node.
  const std::string job = test::write_temp("flow_photonic.yaml", test::small_gpt_yaml(1, 1, 4, 4));
  const auto bad = test::run_cli("simulate " + job +
                                 " --set simulation.comm_model=flow --set cluster.gpus_per_node=1"
                                 " --set cluster.network.fabric=photonic --set cluster.network.photonic.ports_per_node=1");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("simulation.comm_model"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find(job + ": "), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("ports_per_node"), std::string::npos) << bad.output;
  EXPECT_EQ(bad.output.find('\n'), bad.output.size() - 1) << "one line: " << bad.output;
}

}  // namespace
}  // namespace stepsim::sim
