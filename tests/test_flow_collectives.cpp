// Collectives on the flow network: NCCL's ring (one per NIC, rail-aligned), tree, NVLS, chains, all-to-all
// and send/recv, timed alone (FlowCollectiveModel) and together on one shared FlowNetwork. Expected times
// are solved by hand in the comments (S in bytes, GB/s = 1e9 B/s, results in ns, durations rounded up).
#include <gtest/gtest.h>

#include <cmath>

#include "stepsim/cost/collective/flow_collectives.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

using cost::FlowAlgorithm;
using cost::FlowCollectiveModel;
using cost::FlowNetwork;
using cost::GroupGeometry;
using workload::CollType;

using test::GB;

spec::ClusterSpec h100(int gpus) {
  spec::ClusterSpec c;  // 450 GB/s NVLink (1 us), 50 GB/s NIC per GPU (5 us), fat-tree, 0.1 us per fabric hop
  c.num_gpus = gpus;
  return c;
}

// Runs a network until `tag` completes; returns that time.
int64_t finish_of(FlowNetwork& net, uint64_t tag) {
  std::vector<uint64_t> done;
  while (net.next_completion_ns() != INT64_MAX) {
    const int64_t t = net.next_completion_ns();
    done.clear();
    net.advance(t, done);
    if (std::find(done.begin(), done.end(), tag) != done.end()) return t;
  }
  return -1;
}

TEST(FlowCollectives, RingAllReduceOnOneNvSwitchNode) {
  const FlowCollectiveModel m(h100(8));
  // 2(n-1)/n x S / B = 14/8 x 1 GB / 450 GB/s = 3,888,888.9 -> 3,888,889 ns; latency 2(n-1) = 14 steps of the
  // 1 us GPU-switch-GPU path: 14,000 ns. (Two rings in opposite directions, S/2 each, give the same.)
  EXPECT_EQ(m.collective_ns(CollType::AllReduce, 1'000'000'000, {8, 1, 8}), 3'888'889 + 14'000);
  // n = 4: 6/4 x 1 GB / 450 GB/s = 3,333,333.3 -> 3,333,334 ns + 6 us.
  EXPECT_EQ(m.collective_ns(CollType::AllReduce, 1'000'000'000, {4, 1, 4}), 3'333'334 + 6'000);
  // All-gather / reduce-scatter: (n-1)/n x S / B = 7/8 GB / 450 GB/s = 1,944,444.4 -> 1,944,445 ns + 7 us.
  EXPECT_EQ(m.collective_ns(CollType::AllGather, 1'000'000'000, {8, 1, 8}), 1'944'445 + 7'000);
  EXPECT_EQ(m.collective_ns(CollType::ReduceScatter, 1'000'000'000, {8, 1, 8}), 1'944'445 + 7'000);
}

TEST(FlowCollectives, RingAcrossNodesBusBandwidthIsMinOfNvlinkAndNics) {
  // 2 nodes x 8 GPUs, one 50 GB/s NIC per GPU: 8 rings (one per NIC), S/8 each. In ring c every GPU sends one
  // NVLink flow (the last one hands over to GPU c, which sends on NIC c), so a GPU's NVLink port carries 8
  // ring flows (8 r <= 450) and NIC c one (r <= 50): r = 50, bus bandwidth 8 x 50 = 400 = min(450, 8 x 50).
  // Time: 2 x 15/16 x 1 GB / 400 GB/s = 4,687,500 ns. Latency: a ring has 14 NVLink hops (1 us) and 2 node
  // crossings (1 us hand-over + 2.5 + 0.1 + 0.1 + 2.5 us), mean 26.4/16 = 1.65 us, x 30 steps = 49.5 us.
  const FlowCollectiveModel m(h100(16));
  const int64_t t = m.collective_ns(CollType::AllReduce, 1'000'000'000, {16, 2, 8});
  EXPECT_EQ(t, 4'687'500 + 49'500);
  const double busbw = 2.0 * 15 / 16 * GB / ((t - 49'500) * 1e-9);
  EXPECT_NEAR(busbw, 400 * GB, 1e-6 * GB);

  // NVLink-bound: 300 GB/s NVLink, 8 x 50 GB/s NICs: r = 300/8 = 37.5, bus bandwidth 300 = min(300, 400):
  // 1.875 GB / 300 GB/s = 6,250,000 ns (+ the same 49.5 us).
  spec::ClusterSpec c = h100(16);
  c.intra_node.bandwidth_GBps = 300;
  EXPECT_EQ(FlowCollectiveModel(c).collective_ns(CollType::AllReduce, 1'000'000'000, {16, 2, 8}), 6'250'000 + 49'500);
}

TEST(FlowCollectives, RingStaysOnItsRailOnARailOptimizedFabric) {
  spec::ClusterSpec c = h100(64);
  c.network.fabric = spec::Fabric::RailOptimized;
  c.network.leaf_ports = 4;  // 8 nodes: 2 leaves per rail -> rails need spines across groups
  const FlowCollectiveModel m(c);
  hw::Router router(m.topology());
  const auto phases = cost::collective_phases(router, CollType::AllReduce, 1 << 30, m.place({64, 8, 8}), FlowAlgorithm::Ring);
  ASSERT_EQ(phases.size(), 8u);  // one ring per NIC
  const hw::Topology& t = m.topology();
  for (size_t c = 0; c < phases.size(); ++c)
    for (const cost::FlowSpec& f : phases[c].flows) {
      if (t.node_of_rank(f.src_rank) == t.node_of_rank(f.dst_rank)) continue;
      // Every node crossing of ring c goes from GPU c to GPU c: NIC c to NIC c, one rail.
      EXPECT_EQ(f.src_rank % 8, static_cast<int>(c));
      EXPECT_EQ(f.dst_rank % 8, static_cast<int>(c));
    }
}

TEST(FlowCollectives, DestinationModRoutingAvoidsSpineCollisionsOfRings) {
  // 256 MiB ring all-reduce over 128 nodes x 8 on 32 leaves of 32 ports (4 nodes each) and 32 spines.
  // d-mod-k: ring c's crossing from leaf L to leaf L+1 targets GPU c of a node, rank 32(L+1) + c, and goes
  // up spine (32(L+1) + c) mod 32 = c: no two rings share a spine link, so r = 50 GB/s (NIC-bound):
  // 2 x 1023/1024 x 256 MiB / 8 = 67,043,328 B per hop / 50 GB/s = 1,340,866.56 -> 1,340,867 ns.
  // Latency: per ring 128 x 7 NVLink hops (1 us) + 128 hand-overs (1 us) + 96 same-leaf (5.2 us) and 32
  // cross-leaf (5.4 us) node crossings = 1696 us over 1024 hops, x 2046 steps = 3,388,687.5 -> 3,388,688 ns.
  spec::ClusterSpec c = h100(1024);
  c.network.routing = spec::Routing::DestMod;
  const int64_t dmodk = FlowCollectiveModel(c, FlowAlgorithm::Ring).collective_ns(CollType::AllReduce, 256 << 20, {1024, 128, 8});
  EXPECT_EQ(dmodk, 1'340'867 + 3'388'688);
  // ECMP hashes the same crossings over the spines; collisions share links and slow the rings down.
  c.network.routing = spec::Routing::Ecmp;
  const int64_t ecmp = FlowCollectiveModel(c, FlowAlgorithm::Ring).collective_ns(CollType::AllReduce, 256 << 20, {1024, 128, 8});
  EXPECT_GT(ecmp, dmodk);
}

TEST(FlowCollectives, TreeAllReduceAcrossNodes) {
  // 4 nodes x 8 GPUs, S = 512 KiB < 1 MiB: auto picks tree. 8 NIC channels x 2 trees, S/16 = 32,768 B per
  // edge and direction. Tree 0 over nodes 0..3 is in-order (root 1: 1-0, 1-2, 2-3), tree 1 the same shifted by
  // one node (2-1, 2-3, 3-0): node 2 sends to two nodes in each tree, on NIC c in both trees of channel c:
  // 4 r <= 50 GB/s -> r = 12.5 GB/s (NVLink: 28 r <= 450 is looser). 32,768 B / 12.5 GB/s = 2,621.44 -> 2,622 ns.
  // Latency 2 x (7 chain hops x 1 us + depth 2 x 5.2 us) = 34.8 us.
  const FlowCollectiveModel m(h100(32));
  const std::vector<int> ranks = m.place({32, 4, 8});
  EXPECT_EQ(cost::resolve_algorithm(m.topology(), CollType::AllReduce, 512 << 10, ranks, FlowAlgorithm::Auto),
            FlowAlgorithm::Tree);
  EXPECT_EQ(cost::resolve_algorithm(m.topology(), CollType::AllReduce, 1 << 20, ranks, FlowAlgorithm::Auto),
            FlowAlgorithm::Ring);
  EXPECT_EQ(m.collective_ns(CollType::AllReduce, 512 << 10, {32, 4, 8}), 2'622 + 34'800);
}

TEST(FlowCollectives, NvlsAllReduceMovesSOnceThroughTheSwitch) {
  const FlowCollectiveModel m(h100(8), FlowAlgorithm::Nvls);
  // Every GPU sends S to and receives S from the NVSwitch: 1 GB / 450 GB/s = 2,222,222.2 -> 2,222,223 ns,
  // + one switch round trip (0.5 + 0.5 us).
  EXPECT_EQ(m.collective_ns(CollType::AllReduce, 1'000'000'000, {8, 1, 8}), 2'222'223 + 1'000);
  // Without an NVSwitch NVLS falls back to ring.
  spec::ClusterSpec ring_node = h100(8);
  ring_node.network.node = spec::NodeFabric::Ring;
  const FlowCollectiveModel r(ring_node, FlowAlgorithm::Nvls);
  EXPECT_EQ(cost::resolve_algorithm(r.topology(), CollType::AllReduce, 1 << 30, r.place({8, 1, 8}), FlowAlgorithm::Nvls),
            FlowAlgorithm::Ring);
}

TEST(FlowCollectives, BroadcastAndReduceArePipelinedChains) {
  const FlowCollectiveModel m(h100(8));
  // One chain 0 -> 1 -> ... -> 7, every hop S: 1 GB / 450 GB/s -> 2,222,223 ns, + 7 hops x 1 us.
  EXPECT_EQ(m.collective_ns(CollType::Broadcast, 1'000'000'000, {8, 1, 8}), 2'222'223 + 7'000);
  EXPECT_EQ(m.collective_ns(CollType::Reduce, 1'000'000'000, {8, 1, 8}), 2'222'223 + 7'000);
}

TEST(FlowCollectives, AllToAllCrossesTheNics) {
  // 2 nodes x 8, S = 1.6 GB: each rank sends S/16 = 0.1 GB to each of 15 peers, 8 of them on the other node
  // through its own NIC: 8 flows share 50 GB/s -> 6.25 GB/s each, 0.1 GB / 6.25 GB/s = 16 ms (the 7 NVLink
  // flows finish long before). Latency: rank 0's 7 x 1 us + 8 x 5.2 us = 48.6 us.
  const FlowCollectiveModel m(h100(16));
  EXPECT_EQ(m.collective_ns(CollType::AllToAll, 1'600'000'000, {16, 2, 8}), 16'000'000 + 48'600);
  const hw::Topology& t = m.topology();
  // Each GPU's NIC carried its 8 x 0.1 GB = S/2.
  EXPECT_DOUBLE_EQ(m.last_network().link_bytes(t.find_link(t.gpu_vertex(3), t.nic_of_rank(3))), 0.8 * GB);
}

TEST(FlowCollectives, AllToAllOverTooManyFlowsIsRefused) {
  const hw::Topology t = hw::build_topology(h100(4096));
  hw::Router r(t);
  std::vector<int> ranks(4096);
  for (int i = 0; i < 4096; ++i) ranks[i] = i;
  try {
    cost::collective_phases(r, CollType::AllToAll, 1 << 20, ranks);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("all-to-all over 4096 ranks would need 16773120 flows"), std::string::npos)
        << e.what();
  }
}

TEST(FlowCollectives, SendRecvIsOneFlow) {
  const auto m = cost::make_flow_model(h100(16));
  // Same node: 1 GB / 450 GB/s -> 2,222,223 ns + 1 us. Across nodes: 1 GB / 50 GB/s = 20 ms + 5.2 us.
  EXPECT_EQ(m->p2p_ns(1'000'000'000, true), 2'222'223 + 1'000);
  EXPECT_EQ(m->p2p_ns(1'000'000'000, false), 20'000'000 + 5'200);
  EXPECT_EQ(m->p2p_ns(0, false), 0);
  EXPECT_EQ(m->collective_ns(CollType::AllReduce, 1 << 20, {1, 1, 1}), 0);
}

TEST(FlowCollectives, PlaceUsesConsecutiveGpusOfConsecutiveNodes) {
  const FlowCollectiveModel m(h100(32));
  EXPECT_EQ(m.place({16, 2, 8}), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(m.place({6, 3, 2}), (std::vector<int>{0, 1, 8, 9, 16, 17}));
  EXPECT_EQ(m.place({5, 2, 3}), (std::vector<int>{0, 1, 2, 8, 9}));
  EXPECT_THROW(m.place({40, 5, 8}), std::invalid_argument);
}

TEST(FlowCollectives, ConcurrentCollectivesContendOnASharedNic) {
  const hw::Topology t = hw::build_topology(h100(16));
  FlowNetwork net(t);
  // A data-parallel all-reduce over ranks {0, 8} (one per node: one ring, flows 0->8 and 8->0 of
  // 2 x 1/2 x 1 GB = 1 GB) and a pipeline send 0 -> 8 of 1 GB both leave through node0/nic0: 25 GB/s each,
  // 40 ms for both (20 ms each alone). Latency: the send's path 5.2 us; the ring's 2 steps x 5.2 us.
  const std::vector<int> dp = {0, 8};
  net.start(0, cost::collective_phases(net.router(), CollType::AllReduce, 1'000'000'000, dp, FlowAlgorithm::Ring), 1);
  net.start(0, cost::p2p_phases(0, 8, 1'000'000'000), 2);
  EXPECT_EQ(finish_of(net, 2), 40'000'000 + 5'200);
  EXPECT_EQ(finish_of(net, 1), 40'000'000 + 10'400);
  // Alone, the same all-reduce takes 20 ms.
  FlowNetwork alone(t);
  alone.start(0, cost::collective_phases(alone.router(), CollType::AllReduce, 1'000'000'000, dp, FlowAlgorithm::Ring), 1);
  EXPECT_EQ(finish_of(alone, 1), 20'000'000 + 10'400);
}

TEST(FlowCollectives, PhotonicRingPaysCircuitSetupOnce) {
  spec::ClusterSpec c;
  c.num_gpus = 4;
  c.gpus_per_node = 1;
  c.intra_node = {100, 0, ""};
  c.inter_node = {20, 0, ""};
  c.network.fabric = spec::Fabric::Photonic;
  c.network.hop_latency_us = 0;
  c.network.photonic = {2, 10, 1000};  // 2 ports, 10 GB/s circuits, 1 ms setup
  const hw::Topology t = hw::build_topology(c);
  FlowNetwork net(t);
  const std::vector<int> ranks = {0, 1, 2, 3};
  // Ring 0->1->2->3->0 needs circuits (0,1) (1,2) (2,3) (0,3): two ports per node. Each hop carries
  // 2 x 3/4 x 1 GB = 1.5 GB at 10 GB/s = 150 ms, after 1 ms of setup: 151 ms.
  net.start(0, cost::collective_phases(net.router(), CollType::AllReduce, 1'000'000'000, ranks, FlowAlgorithm::Ring), 1);
  EXPECT_EQ(finish_of(net, 1), 151'000'000);
  // Again at 200 ms: the circuits are still up, 150 ms.
  std::vector<uint64_t> done;
  net.advance(200'000'000, done);
  net.start(200'000'000, cost::collective_phases(net.router(), CollType::AllReduce, 1'000'000'000, ranks, FlowAlgorithm::Ring), 2);
  EXPECT_EQ(finish_of(net, 2), 350'000'000);
  EXPECT_EQ(net.circuits_established(), 4u);
}

TEST(FlowCollectives, CloseToAlphaBetaWhereBothApply) {
  // Uncontended ring all-gather of 1 GB over 16 nodes x 8: both models give min(NVLink, 8 x NIC) = 400 GB/s
  // of bus bandwidth; only the latency terms differ (NCCL's inter/intra step split vs mean path latency):
  // alpha-beta 2,480,469 + 187,000 ns, flow 2,480,469 + 127 x 1.65 us = 209,550 ns. One 128-port leaf: with
  // spines, ECMP hash collisions of the rings' cross-leaf hops would slow some rings (modelled, see NETWORK.md).
  spec::ClusterSpec c = h100(128);
  c.network.leaf_ports = 128;
  const FlowCollectiveModel flow(c);
  const auto ab = cost::make_alpha_beta_model(c);
  const double f = static_cast<double>(flow.collective_ns(CollType::AllGather, 1'000'000'000, {128, 16, 8}));
  const double a = static_cast<double>(ab->collective_ns(CollType::AllGather, 1'000'000'000, {128, 16, 8}));
  EXPECT_NEAR(f / a, 1.0, 0.02) << f << " vs " << a;
}

}  // namespace
}  // namespace stepsim
