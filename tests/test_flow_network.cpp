// FlowNetwork: max-min sharing, coupling, incremental re-rating, latency, statistics and the photonic
// circuit fabric. Every expected time is solved by hand in the comment above it (1 GB = 1e9 bytes,
// GB/s = 1e9 B/s, times in ns; durations round up to the next ns).
#include <gtest/gtest.h>

#include <functional>

#include "stepsim/net/flow_network.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using cost::FlowNetwork;
using cost::FlowSpec;
using hw::Topology;
using hw::TopologyBuilder;
using hw::VertexKind;

using test::GB;
constexpr int64_t ms = 1'000'000;

struct Done {
  int64_t t;
  uint64_t tag;
  bool operator==(const Done&) const = default;
};

std::ostream& operator<<(std::ostream& o, const Done& d) { return o << "{" << d.t << " ns, tag " << d.tag << "}"; }

// Runs the network until idle, recording when each tag completes.
std::vector<Done> run(FlowNetwork& net) {
  std::vector<Done> out;
  std::vector<uint64_t> done;
  while (net.next_completion_ns() != INT64_MAX) {
    const int64_t t = net.next_completion_ns();
    done.clear();
    net.advance(t, done);
    for (uint64_t tag : done) out.push_back({t, tag});
  }
  return out;
}

// Four single-GPU "nodes" under one switch; gpu i -> switch at up[i] GB/s, switch -> gpu i at down[i] GB/s.
Topology star(std::vector<double> up, std::vector<double> down, double latency = 0) {
  TopologyBuilder b(static_cast<int>(up.size()), 1);
  const int sw = b.add_vertex(VertexKind::Leaf, -1, 0);
  for (size_t i = 0; i < up.size(); ++i) {
    b.add_link(static_cast<int>(i), sw, up[i] * GB, latency);
    b.add_link(sw, static_cast<int>(i), down[i] * GB, latency);
  }
  return b.finish();
}

// Directed ring gpu i -> gpu i+1 with the given bandwidths (GB/s).
Topology ring(std::vector<double> bw) {
  const int n = static_cast<int>(bw.size());
  TopologyBuilder b(n, 1);
  for (int i = 0; i < n; ++i) b.add_link(i, (i + 1) % n, bw[i] * GB, 0);
  return b.finish();
}

spec::ClusterSpec cluster_of(const std::string& yaml, int gpus, int gpus_per_node) {
  static int counter = 0;
  const std::string path = test::write_temp("flow_network_" + std::to_string(counter++) + ".yaml", yaml);
  return spec::load_cluster(stepsim::catalog::shipped().gpus, path, gpus, gpus_per_node, {});
}

TEST(FlowNetwork, TwoFlowsOnOneLinkShareItEqually) {
  const Topology t = star({100, 100, 100}, {100, 100, 100});
  FlowNetwork net(t);
  // 0->2 and 1->2 share switch->gpu2 (100 GB/s): 50 GB/s each, 1 GB / 50 GB/s = 20 ms for both.
  net.start(0, {{0, 2, 1 * GB}}, false, 7);
  net.start(0, {{1, 2, 1 * GB}}, false, 3);
  EXPECT_EQ(run(net), (std::vector<Done>{{20 * ms, 3}, {20 * ms, 7}}));  // equal times: ascending tag
}

TEST(FlowNetwork, BottleneckBehindAFastLink) {
  TopologyBuilder b(2, 1);
  const int sw = b.add_vertex(VertexKind::Leaf, -1, 0);
  b.add_link(0, sw, 400 * GB, 1e-6);
  b.add_link(sw, 1, 10 * GB, 2e-6);
  const Topology t = b.finish();
  FlowNetwork net(t);
  // The 10 GB/s link sets the pace: 1 GB / 10 GB/s = 100 ms, + path latency 1 + 2 us.
  net.start(0, {{0, 1, 1 * GB}}, false, 1);
  EXPECT_EQ(run(net), (std::vector<Done>{{100 * ms + 3000, 1}}));
}

TEST(FlowNetwork, FlowFinishingEarlyFreesBandwidthForTheOther) {
  const Topology t = star({100, 100, 100}, {100, 100, 100});
  FlowNetwork net(t);
  // A (1 GB) and B (3 GB) share 100 GB/s: 50 each. A ends at 1/50 s = 20 ms; B has 3 - 1 = 2 GB left and
  // now 100 GB/s: 20 ms more, ends at 40 ms.
  net.start(0, {{0, 2, 1 * GB}, {1, 2, 3 * GB}}, false, 1);  // one uncoupled phase, ends with B
  net.start(0, {{0, 2, 0}}, false, 2);                        // zero bytes: done at once (no latency here)
  EXPECT_EQ(net.next_completion_ns(), 0);
  EXPECT_EQ(run(net), (std::vector<Done>{{0, 2}, {40 * ms, 1}}));

  // A late joiner: A (1 GB) alone at 100 GB/s from 0; B (1 GB) joins at 5 ms when A has 0.5 GB left; both at
  // 50: A ends at 5 + 0.5/50 s = 15 ms; B moved 0.5 GB by then, the rest at 100 GB/s: 15 + 5 = 20 ms.
  FlowNetwork late(t);
  late.start(0, {{0, 2, 1 * GB}}, false, 1);
  std::vector<uint64_t> done;
  late.advance(5 * ms, done);
  EXPECT_TRUE(done.empty());
  late.start(5 * ms, {{1, 2, 1 * GB}}, false, 2);
  EXPECT_EQ(run(late), (std::vector<Done>{{15 * ms, 1}, {20 * ms, 2}}));
  EXPECT_EQ(late.rate_recomputations(), 3u);  // start A, start B, A drains (B's drain leaves nothing to re-rate)
}

TEST(FlowNetwork, CoupledRingMovesAtThePaceOfItsSlowestLink) {
  const Topology t = ring({100, 100, 100, 25});
  FlowNetwork net(t);
  // Ring 0->1->2->3->0, 1 GB per hop, coupled: one rate r for all hops, r <= 25 GB/s (link 3->0), so the
  // ring ends at 1/25 s = 40 ms. A separate flow X (1 GB) on 0->1 gets the rest of that link by max-min:
  // 100 - 25 = 75 GB/s, 1/75 s = 13,333,333.3 ns -> 13,333,334 ns.
  net.start(0, {{0, 1, 1 * GB}, {1, 2, 1 * GB}, {2, 3, 1 * GB}, {3, 0, 1 * GB}}, true, 1);
  net.start(0, {{0, 1, 1 * GB}}, false, 2);
  EXPECT_EQ(run(net), (std::vector<Done>{{13'333'334, 2}, {40 * ms, 1}}));

  // A coupled phase crossing one link twice counts it twice: 2 x r <= 100 -> r = 50 -> 20 ms.
  FlowNetwork twice(t);
  twice.start(0, {{0, 1, 1 * GB}, {0, 1, 1 * GB}}, true, 1);
  EXPECT_EQ(run(twice), (std::vector<Done>{{20 * ms, 1}}));

  // Unequal flows in a coupled phase keep pace with the largest: 0->1 carries 2 GB, 1->2 carries 1 GB on a
  // 100 GB/s ring: r = 100 (link 0->1 carries r, link 1->2 r/2), 2 GB / 100 GB/s = 20 ms.
  FlowNetwork uneven(t);
  uneven.start(0, {{0, 1, 2 * GB}, {1, 2, 1 * GB}}, true, 1);
  EXPECT_EQ(run(uneven), (std::vector<Done>{{20 * ms, 1}}));
}

TEST(FlowNetwork, OversubscribedFatTreeHalvesCrossLeafBandwidth) {
  // 4 single-GPU nodes, 2 NICs per leaf, 2:1 oversubscription: ceil(2 / 2) = 1 spine, leaf-spine link
  // 2 x 50 / (2 x 1) = 50 GB/s shared by the leaf's two NICs. No latency.
  const spec::ClusterSpec c = cluster_of(
      "inter_node: {bandwidth_GBps: 50, latency_us: 0}\nintra_node: {bandwidth_GBps: 450, latency_us: 0}\n"
      "network: {leaf_ports: 2, oversubscription: 2, hop_latency_us: 0}\n",
      4, 1);
  const Topology t = hw::build_topology(c);
  FlowNetwork net(t);
  // Two flows leaving leaf0 (0->2, 1->3): 50 GB/s up-link / 2 = 25 each: 1 GB / 25 GB/s = 40 ms.
  net.start(0, {{0, 2, 1 * GB}}, false, 1);
  net.start(0, {{1, 3, 1 * GB}}, false, 2);
  EXPECT_EQ(run(net), (std::vector<Done>{{40 * ms, 1}, {40 * ms, 2}}));
  // Within the leaf (0->1) and alone across leaves (0->2): the NIC rate, 1 GB / 50 GB/s = 20 ms.
  FlowNetwork alone(t);
  alone.start(0, {{0, 1, 1 * GB}}, false, 1);
  alone.start(0, {{2, 0, 1 * GB}}, false, 2);
  EXPECT_EQ(run(alone), (std::vector<Done>{{20 * ms, 1}, {20 * ms, 2}}));
}

TEST(FlowNetwork, EcmpRunsAreDeterministic) {
  spec::ClusterSpec c;
  c.num_gpus = 1024;
  c.network.routing = spec::Routing::Ecmp;
  const Topology t = hw::build_topology(c);
  auto once = [&] {
    FlowNetwork net(t);
    for (int i = 0; i < 64; ++i) net.start(0, {{i, 512 + (i * 7) % 512, 1 * GB}}, false, static_cast<uint64_t>(i));
    return run(net);
  };
  const std::vector<Done> a = once();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, once());
  // Hash collisions on spines make some flows slower than the 20 ms a lone flow takes (50 GB/s NIC).
  EXPECT_GE(a.front().t, 20 * ms);
}

TEST(FlowNetwork, SlowLinkSlowsOnlyTheFlowsThatCrossIt) {
  const spec::ClusterSpec c = cluster_of(
      "intra_node: {bandwidth_GBps: 450, latency_us: 0}\n"
      "network: {slow_links: [{from: node0/gpu3, to: node0/nvswitch, scale: 0.25}]}\n",
      8, 8);
  const Topology t = hw::build_topology(c);
  FlowNetwork net(t);
  // gpu3 -> nvswitch at 450 x 0.25 = 112.5 GB/s: 1 GB takes 8,888,888.9 -> 8,888,889 ns;
  // 0 -> 1 at 450 GB/s: 2,222,222.2 -> 2,222,223 ns.
  net.start(0, {{3, 4, 1 * GB}}, false, 1);
  net.start(0, {{0, 1, 1 * GB}}, false, 2);
  EXPECT_EQ(run(net), (std::vector<Done>{{2'222'223, 2}, {8'888'889, 1}}));
}

TEST(FlowNetwork, PcieGpuPairsAcrossSocketsAreSlower) {
  const spec::ClusterSpec c = spec::load_cluster(stepsim::catalog::shipped().gpus, test::source_dir() + "/data/topologies/a40-pcie-numa.yaml", 4, 4, {});
  const Topology t = hw::build_topology(c);
  // Same socket (gpu0 -> pcie0 -> cpu0 -> pcie1 -> gpu1): every link 24 GB/s, 1 GB / 24 GB/s = 41,666,666.7
  // -> 41,666,667 ns, + 4 links x 1 us (half of intra_node latency 2 us) = 41,670,667 ns.
  // Across sockets (... cpu0 -> cpu1 ...): the SYS link's 16 GB/s, 62.5 ms, + 5 links x 1 us = 62,505,000 ns.
  FlowNetwork same(t), cross(t);
  same.start(0, {{0, 1, 1 * GB}}, false, 1);
  cross.start(0, {{0, 2, 1 * GB}}, false, 2);
  EXPECT_EQ(run(same), (std::vector<Done>{{41'670'667, 1}}));
  EXPECT_EQ(run(cross), (std::vector<Done>{{62'505'000, 2}}));
  // Together they share gpu0 -> pcie0 -> cpu0 (24 GB/s): 12 GB/s each (the SYS link's 16 is not the
  // bottleneck then): 1/12 s = 83,333,333.3 -> 83,333,334 ns, + 4 us and + 5 us.
  FlowNetwork net(t);
  net.start(0, {{0, 1, 1 * GB}}, false, 1);
  net.start(0, {{0, 2, 1 * GB}}, false, 2);
  EXPECT_EQ(run(net), (std::vector<Done>{{83'337'334, 1}, {83'338'334, 2}}));
}

TEST(FlowNetwork, IncrementalSolveTouchesOnlyTransfersSharingLinks) {
  spec::ClusterSpec c;
  c.num_gpus = 16;
  const Topology t = hw::build_topology(c);
  FlowNetwork net(t);
  net.start(0, {{0, 1, 1 * GB}, {1, 0, 1 * GB}}, true, 1);   // inside node 0
  net.start(0, {{8, 9, 1 * GB}, {9, 8, 1 * GB}}, true, 2);   // inside node 1: its own component
  net.start(0, {{2, 3, 1 * GB}}, false, 3);                  // node 0 again, but no link shared with tag 1
  EXPECT_EQ(net.rate_recomputations(), 3u);
  EXPECT_EQ(net.rerated_transfers(), 3u);  // each start re-rated only itself
  net.start(0, {{4, 1, 1 * GB}}, false, 4);  // shares nvswitch->gpu1 with tag 1: re-rates both
  EXPECT_EQ(net.rerated_transfers(), 5u);
  run(net);
  EXPECT_TRUE(net.idle());
}

TEST(FlowNetwork, LocalAndZeroByteFlowsCostOnlyLatency) {
  spec::ClusterSpec c;
  c.num_gpus = 16;
  const Topology t = hw::build_topology(c);
  FlowNetwork net(t);
  net.start(1000, {{5, 5, 1 * GB}}, false, 1);  // same GPU: nothing moves, done at once
  net.start(1000, {{0, 8, 0}}, true, 2);        // 0 bytes across nodes: the path latency, 5.2 us
  net.start(1000, {{0, 1, 0}}, true, 3, 700);   // 0 bytes in the node: 1 us + 700 ns extra latency
  EXPECT_EQ(run(net), (std::vector<Done>{{1000, 1}, {2700, 3}, {6200, 2}}));
}

TEST(FlowNetwork, LinkStatisticsCountBytesPerLink) {
  spec::ClusterSpec c;
  c.num_gpus = 16;
  const Topology t = hw::build_topology(c);
  FlowNetwork net(t);
  net.start(0, {{2, 10, 1 * GB}}, false, 1);
  net.start(0, {{3, 2, 0.5 * GB}}, false, 2);
  run(net);
  const auto top = net.busiest_links(4);
  ASSERT_EQ(top.size(), 4u);
  for (const auto& l : top) EXPECT_DOUBLE_EQ(l.bytes, 1 * GB);
  EXPECT_EQ(t.link_name(top[0].link), "node0/gpu2->node0/nic2");  // equal bytes: lower link id first
  EXPECT_DOUBLE_EQ(net.link_bytes(t.find_link(t.gpu_vertex(3), t.nvswitch_of_node(0))), 0.5 * GB);
}

TEST(FlowNetwork, StartInThePastIsRefused) {
  const Topology t = star({1, 1}, {1, 1});
  FlowNetwork net(t);
  std::vector<uint64_t> done;
  net.advance(100, done);
  EXPECT_THROW(net.start(50, {{0, 1, 1}}, false, 1), std::invalid_argument);
  EXPECT_THROW(net.start(100, {{0, 9, 1}}, false, 1), std::out_of_range);
}

// Photonic: 4 single-GPU nodes, circuits of 10 GB/s, 1 ms to set up, no latency anywhere.
spec::ClusterSpec photonic_cluster(int ports) {
  return cluster_of("intra_node: {bandwidth_GBps: 100, latency_us: 0}\ninter_node: {bandwidth_GBps: 20, latency_us: 0}\n"
                    "network: {fabric: photonic, hop_latency_us: 0, photonic: {ports_per_node: " +
                        std::to_string(ports) + ", port_GBps: 10, setup_us: 1000}}\n",
                    4, 1);
}

TEST(FlowNetwork, PhotonicSetupIsPaidOncePerCircuit) {
  const Topology t = hw::build_topology(photonic_cluster(1));
  FlowNetwork net(t);
  // 0->1: 1 ms setup + 1 GB / 10 GB/s = 101 ms. Again at 200 ms: the circuit is up, 100 ms -> 300 ms.
  net.start(0, {{0, 1, 1 * GB}}, false, 1);
  EXPECT_EQ(run(net), (std::vector<Done>{{101 * ms, 1}}));
  std::vector<uint64_t> done;
  net.advance(200 * ms, done);
  net.start(200 * ms, {{1, 0, 1 * GB}}, false, 2);  // the reverse direction rides the same circuit
  EXPECT_EQ(run(net), (std::vector<Done>{{300 * ms, 2}}));
  EXPECT_EQ(net.circuits_established(), 1u);
  // With one port per node, 0->2 must wait for 0->1's circuit to go idle (at 401 ms), evict it, set up:
  // 401 + 1 + 100 = 502 ms.
  net.advance(300 * ms, done);
  net.start(300 * ms, {{0, 3, 1 * GB}}, false, 3);  // node 0's port: circuit (0,1) is idle -> evicted now
  net.start(300 * ms, {{0, 2, 1 * GB}}, false, 4);  // port busy setting up (0,3): waits
  EXPECT_EQ(run(net), (std::vector<Done>{{401 * ms, 3}, {502 * ms, 4}}));
  EXPECT_EQ(net.circuits_established(), 3u);
  EXPECT_EQ(net.circuits_evicted(), 2u);
}

TEST(FlowNetwork, PhotonicEvictsTheLongestIdleCircuit) {
  const Topology t = hw::build_topology(photonic_cluster(2));
  FlowNetwork net(t);
  std::vector<uint64_t> done;
  // t=0: A=(0,1) carries 0.5 GB (1 + 50 ms -> idle from 51 ms), B=(0,2) 1 GB (idle from 101 ms).
  net.start(0, {{0, 1, 0.5 * GB}}, false, 1);
  net.start(0, {{0, 2, 1 * GB}}, false, 2);
  EXPECT_EQ(run(net), (std::vector<Done>{{51 * ms, 1}, {101 * ms, 2}}));
  // t=200: 0->3 needs a port at node 0: both idle, A longest -> evicted; C=(0,3): 1 + 100 -> 301 ms.
  net.advance(200 * ms, done);
  net.start(200 * ms, {{0, 3, 1 * GB}}, false, 3);
  EXPECT_EQ(run(net), (std::vector<Done>{{301 * ms, 3}}));
  // t=400: 0->2 still has B: no setup, 100 ms -> 500 ms.
  net.advance(400 * ms, done);
  net.start(400 * ms, {{0, 2, 1 * GB}}, false, 4);
  EXPECT_EQ(run(net), (std::vector<Done>{{500 * ms, 4}}));
  // t=600: 0->1 again: A is gone (setup again); node 0 holds B (idle since 500) and C (since 301): C goes.
  net.advance(600 * ms, done);
  net.start(600 * ms, {{0, 1, 1 * GB}}, false, 5);
  EXPECT_EQ(run(net), (std::vector<Done>{{701 * ms, 5}}));
  net.advance(800 * ms, done);
  net.start(800 * ms, {{2, 0, 1 * GB}}, false, 6);  // B survived: 900 ms, no setup
  EXPECT_EQ(run(net), (std::vector<Done>{{900 * ms, 6}}));
  EXPECT_EQ(net.circuits_established(), 4u);  // A, B, C, A again
  EXPECT_EQ(net.circuits_evicted(), 2u);      // A, C
}

TEST(FlowNetwork, PhotonicTransferNeedingMoreCircuitsThanPortsIsAnInputError) {
  const Topology t = hw::build_topology(photonic_cluster(1));
  FlowNetwork net(t);
  // A coupled ring over 3 nodes needs two circuits at every node; a node has one port.
  try {
    net.start(0, {{0, 1, 1 * GB}, {1, 2, 1 * GB}, {2, 0, 1 * GB}}, true, 1);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.network.photonic.ports_per_node"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stepsim
