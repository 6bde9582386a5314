// NCCL's tuning model against a real TUNING table (NCCL 2.29.7, shared/data/real/nccl-logs/
// eunomia-bpf-nccl-ebpf-default-suboptimal-search.log: 2 ranks on 2 "nodes" joined by NET, one rank per node) and
// against closed forms of shared/data/nccl_model_facts.md §5.
#include <gtest/gtest.h>

#include "stepsim/cost/collective/nccl_tuner.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::cost {
namespace {

using workload::CollType;

TunerTopology two_rank_net() {
  TunerTopology t;
  t.ranks = 2;
  t.nodes = 2;
  t.ranks_per_node = 1;
  t.cc = CompCap::Blackwell;
  t.nvlink_intra = false;
  t.ll128 = true;  // the log prints LL128 latencies even where LL128 has no bandwidth
  t.channels = 2;
  t.bw_intra = 1.2;  // nChannels x bw = 2.4 GB/s, the ring Simple busBw the table implies
  t.bw_inter = 1.2;
  return t;
}

TEST(NcclTuner, LatenciesMatchTheRealTuningTable) {
  const TunerTopology t = two_rank_net();
  struct Cell {
    CollType c;
    Algorithm a;
    Protocol p;
    double lat;
  };
  // Values copied from the log's "lat/bw" cells.
  const Cell cells[] = {
      {CollType::AllReduce, Algorithm::Ring, Protocol::LL, 16.6},
      {CollType::AllReduce, Algorithm::Ring, Protocol::LL128, 31.0},
      {CollType::AllReduce, Algorithm::Ring, Protocol::Simple, 36.4},
      {CollType::AllReduce, Algorithm::Tree, Protocol::LL, 16.8},
      {CollType::AllReduce, Algorithm::Tree, Protocol::LL128, 31.0},
      {CollType::AllReduce, Algorithm::Tree, Protocol::Simple, 36.4},
      {CollType::AllGather, Algorithm::Ring, Protocol::LL, 11.6},
      {CollType::AllGather, Algorithm::Ring, Protocol::LL128, 22.5},
      {CollType::AllGather, Algorithm::Ring, Protocol::Simple, 22.4},
      {CollType::ReduceScatter, Algorithm::Ring, Protocol::Simple, 22.4},
      {CollType::Broadcast, Algorithm::Ring, Protocol::LL, 9.3},
      {CollType::Broadcast, Algorithm::Ring, Protocol::LL128, 18.0},
      {CollType::Broadcast, Algorithm::Ring, Protocol::Simple, 22.4},
      {CollType::Reduce, Algorithm::Ring, Protocol::Simple, 22.4},
      {CollType::AllGather, Algorithm::Pat, Protocol::Simple, 17.6},
  };
  for (const Cell& c : cells) {
    EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, c.c, c.a, c.p, t).latency_us, c.lat, 0.05)
        << workload::name_of(c.c) << " " << name_of(c.a) << "/" << name_of(c.p);
  }
}

TEST(NcclTuner, RingBandwidthsMatchTheRealTuningTable) {
  const TunerTopology t = two_rank_net();
  // Ring algBw = busBw * n / nsteps: all-reduce 2.4 * 2/2, all-gather 2.4 * 2/1, broadcast 2.4 * 2/2; LL halves.
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Ring, Protocol::Simple, t).algbw_GBps, 2.4, 1e-9);
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Ring, Protocol::LL, t).algbw_GBps, 1.2, 1e-9);
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllGather, Algorithm::Ring, Protocol::Simple, t).algbw_GBps, 4.8, 1e-9);
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllGather, Algorithm::Ring, Protocol::LL, t).algbw_GBps, 2.4, 1e-9);
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::Broadcast, Algorithm::Ring, Protocol::Simple, t).algbw_GBps, 2.4, 1e-9);
  // Without NVLink NCCL disables LL128: no bandwidth, never chosen.
  TunerTopology pcie = t;
  pcie.ll128 = false;
  EXPECT_EQ(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Ring, Protocol::LL128, pcie).algbw_GBps, 0.0);
}

TEST(NcclTuner, RingLatencyClosedFormAcrossNodes) {
  // 4 nodes x 8 NVLink GPUs, Ring/Simple all-reduce: nsteps 62 of which 2(4-1) = 6 cross nodes;
  // intraLat = max(3.4, netOverhead 1.0 x 3) = 3.4, interLat = 14: 8.4 + 56 x 3.4 + 6 x 14 = 282.8 us.
  TunerTopology t;
  t.ranks = 32;
  t.nodes = 4;
  t.ranks_per_node = 8;
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Ring, Protocol::Simple, t).latency_us, 282.8, 1e-9);
  // Tree: 8.4 + 2 x (7 x 4.0 + log2(4) x 14) = 120.4 us.
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Tree, Protocol::Simple, t).latency_us, 120.4, 1e-9);
  // One node of 8: Ring/LL 6.6 + 14 x 0.6 = 15.0 us.
  t.ranks = 8;
  t.nodes = 1;
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Ring, Protocol::LL, t).latency_us, 15.0, 1e-9);
}

TEST(NcclTuner, ChoosesLowLatencyProtocolsForSmallAndSimpleForLargeMessages) {
  TunerTopology t;
  t.ranks = 8;
  t.nodes = 1;
  t.ranks_per_node = 8;
  t.cc = CompCap::Ampere;
  t.bw_intra = 240.0 / 16;
  t.bw_inter = 0;
  const TunerChoice small = tuner_choose(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, 4096, t);
  EXPECT_EQ(small.protocol, Protocol::LL);
  EXPECT_LT(small.channels, t.channels);  // few bytes per thread: fewer channels
  const TunerChoice large = tuner_choose(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, 1ull << 30, t);
  EXPECT_EQ(large.algorithm, Algorithm::Ring);
  EXPECT_EQ(large.protocol, Protocol::Simple);
  EXPECT_EQ(large.channels, t.channels);
}

TEST(NcclTuner, NvlsOnlyOnHopperNvswitchNodes) {
  TunerTopology t;
  t.ranks = 8;
  t.nodes = 1;
  t.ranks_per_node = 8;
  t.nvls = true;
  EXPECT_GT(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Nvls, Protocol::Simple, t).algbw_GBps, 0);
  EXPECT_EQ(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Nvls, Protocol::LL, t).algbw_GBps, 0);  // Simple only
  t.nvls = false;
  EXPECT_THROW(tuner_choose(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, 1 << 20, t, Algorithm::Nvls), std::exception);
  // NVLS-tree needs more than one node; broadcast has only ring.
  t.nvls = true;
  EXPECT_THROW(tuner_choose(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, 1 << 20, t, Algorithm::NvlsTree), std::exception);
  EXPECT_THROW(tuner_choose(stepsim::catalog::shipped().nccl_tuner, CollType::Broadcast, 1 << 20, t, Algorithm::Tree), std::exception);
}

}  // namespace
}  // namespace stepsim::cost

namespace stepsim::cost {
namespace {

// 4 nodes x 8 Hopper GPUs on NVSwitch (NVLS), 16 channels of `bw_intra` NVLink and 25 GB/s NIC (8 x 50 / 16).
TunerTopology hopper_4x8(double bw_intra) {
  TunerTopology t;
  t.ranks = 32;
  t.nodes = 4;
  t.ranks_per_node = 8;
  t.cc = CompCap::Hopper;
  t.nvls = true;
  t.nvswitch = true;
  t.channels = 16;
  t.bw_intra = bw_intra;
  t.bw_inter = 25;
  return t;
}

// Across more than two nodes a ring's per-channel speed is the NIC's share but never more than the NVLink paths
// inside a node carry (NCCL searches one speed for both); NVLS-tree keeps its own NVSwitch and NIC terms (§5.2).
TEST(NcclTuner, MultiNodeRingSpeedIsCappedByTheIntraNodePaths) {
  TunerTopology t = hopper_4x8(10);  // 200 GB/s NVLink (H800) x 0.8 / 16 channels
  // Ring Simple: busBw = 16 x min(25, 10) = 160; algBw = 160 x 32 / 62.
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Ring, Protocol::Simple, t).algbw_GBps, 160.0 * 32 / 62, 1e-9);
  // NVLS-tree: intra 10 x 16 x 0.85 x 15/16 x 2 = 255 < inter 25 x 16 = 400 < cap 45.5 x 16; algBw x 32/62.
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::NvlsTree, Protocol::Simple, t).algbw_GBps,
              10 * 16 * 0.85 * 15 / 16 * 2 * 32 / 62, 1e-9);
  // One GPU per node: nothing inside the node to cap.
  t.ranks = 4;
  t.ranks_per_node = 1;
  t.nvls = false;
  EXPECT_NEAR(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Ring, Protocol::Simple, t).algbw_GBps, 400.0 * 4 / 6, 1e-9);
}

// CollNet (SHARP) on 4 nodes x 8 H100 (NVSwitch), 16 channels of 22.5 GB/s NVLink (450 x 0.8 / 16), facts §5:
// CollNetDirect per-channel bw = bwIntra (CollNet), busBw = 16 x 22.5 = 360, f = ppn / nCh = 0.5 -> / (f - (f-1)/2)
// = / 0.75 -> 480, x 0.85 on sm90 -> 408, algBw = busBw x 0.5 = 204 GB/s; latency = base 0 + 2 (min(1, 7) x 3.7 +
// 7 x 0.4) + 31 = 44 us. CollNetChain: busBw 360 -> algBw 180; latency 2 x 7 x 2.8 + 30 = 69.2 us.
TEST(NcclTuner, CollNetOnlyWithSharpAndItsClosedForms) {
  TunerTopology t = hopper_4x8(22.5);
  EXPECT_EQ(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::CollNetDirect, Protocol::Simple, t).algbw_GBps, 0.0);
  EXPECT_EQ(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Nvls, Protocol::Simple, t).algbw_GBps, 0.0);
  EXPECT_NE(tuner_choose(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, 1 << 30, t).algorithm, Algorithm::CollNetDirect);
  t.collnet = true;
  const TunerCell d = tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::CollNetDirect, Protocol::Simple, t);
  EXPECT_NEAR(d.algbw_GBps, 204.0, 1e-9);
  EXPECT_NEAR(d.latency_us, 44.0, 1e-9);
  const TunerCell c = tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::CollNetChain, Protocol::Simple, t);
  EXPECT_NEAR(c.algbw_GBps, 180.0, 1e-9);
  EXPECT_NEAR(c.latency_us, 69.2, 1e-9);
  EXPECT_EQ(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::CollNetDirect, Protocol::LL, t).algbw_GBps, 0.0);  // Simple only
  EXPECT_EQ(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllGather, Algorithm::CollNetChain, Protocol::Simple, t).algbw_GBps, 0.0);
  // With SHARP, NVLS also spans nodes (NVLS + SHARP) and wins for large all-reduces on Hopper NVSwitch nodes.
  EXPECT_GT(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::Nvls, Protocol::Simple, t).algbw_GBps, 0.0);
  EXPECT_EQ(tuner_choose(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, 1 << 30, t).algorithm, Algorithm::Nvls);
  // Without NVSwitch, only the chain.
  t.nvswitch = t.nvls = false;
  EXPECT_EQ(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::CollNetDirect, Protocol::Simple, t).algbw_GBps, 0.0);
  EXPECT_GT(tuner_cell(stepsim::catalog::shipped().nccl_tuner, CollType::AllReduce, Algorithm::CollNetChain, Protocol::Simple, t).algbw_GBps, 0.0);
}

}  // namespace
}  // namespace stepsim::cost
