// White-box NCCL model: the terms of Echo eq. 2-5 for hand-computed cases (NCCL chunk sizes from
// shared/data/nccl_model_facts.md §6), and the model inside a simulated step.
#include <gtest/gtest.h>

#include "stepsim/cost/collective/nccl_model.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::cost {
namespace {

using workload::CollType;

spec::ClusterSpec cluster(const std::string& gpu, double nvlink_GBps, double nic_GBps) {
  spec::ClusterSpec c;
  c.gpu = gpu;
  c.num_gpus = 64;
  c.intra_node.bandwidth_GBps = nvlink_GBps;
  c.inter_node.bandwidth_GBps = nic_GBps;
  return c;
}

TEST(NcclModel, RingExchangeIsTimedAsItsPointToPointTransfer) {
  // CollType::SendRecv: NCCL's send/recv of S between neighbours, inside a node or across nodes; no algorithm choice.
  const auto m = make_nccl_model(stepsim::catalog::shipped(), cluster("H100-SXM", 450, 50));
  for (const GroupGeometry g : {GroupGeometry{8, 1, 8}, GroupGeometry{16, 2, 8}}) {
    const int64_t t = m->collective_ns(CollType::SendRecv, 64ull << 20, g);
    EXPECT_EQ(t, m->p2p_ns(64ull << 20, g.nodes == 1)) << g.nodes;
    EXPECT_GT(t, 0);
  }
  EXPECT_THROW(m->estimate(CollType::SendRecv, 1 << 20, GroupGeometry{8, 1, 8}, Algorithm::Ring), InputError);
}

TEST(NcclModel, RingAllReduceTermsOnOneNode) {
  const NcclHardware hw = nccl_hardware(stepsim::catalog::shipped(), cluster("A100-80GB", 300, 25), 16);
  const uint64_t P = 1ull << 30;
  const NcclTerms t = nccl_terms(hw, CollType::AllReduce, P, {8, 1, 8}, Algorithm::Ring);
  ASSERT_EQ(t.protocol, Protocol::Simple);
  // eta = ceil(P / (16 channels x 8 ranks x 2 MiB chunk)) = 4 rounds of 2(8-1) = 14 steps.
  EXPECT_EQ(t.eta, 4);
  EXPECT_DOUBLE_EQ(t.x[0], 1.0);       // Ring/Simple is the reference of alpha
  EXPECT_DOUBLE_EQ(t.x[1], 4.0 * 14);  // beta per step
  EXPECT_DOUBLE_EQ(t.x[2], 0.0);       // no NIC on one node
  EXPECT_NEAR(t.x[3], 14.0 / 8 * P / 300e3, 1e-6);  // each link carries 2(n-1)/n of the buffer
  EXPECT_DOUBLE_EQ(t.x[4], 0.0);
  EXPECT_NEAR(t.x[5], 7.0 / 8 * P / 1e3, 1e-6);     // (n-1)/n of the buffer is reduced per rank
  EXPECT_EQ(t.chunk_bytes, P / 4 / 16);
}

TEST(NcclModel, RoundsStepUpAtTheChunkBoundary) {
  const NcclHardware hw = nccl_hardware(stepsim::catalog::shipped(), cluster("A100-80GB", 300, 25), 16);
  const uint64_t one_round = 16ull * 8 * 2 * 1024 * 1024;  // channels x ranks x chunk
  EXPECT_EQ(nccl_terms(hw, CollType::AllReduce, one_round, {8, 1, 8}, Algorithm::Ring).eta, 1);
  EXPECT_EQ(nccl_terms(hw, CollType::AllReduce, one_round + 1, {8, 1, 8}, Algorithm::Ring).eta, 2);
  // all-gather: n-1 steps per round, nothing reduced
  const NcclTerms ag = nccl_terms(hw, CollType::AllGather, one_round, {8, 1, 8}, Algorithm::Ring);
  EXPECT_DOUBLE_EQ(ag.x[1], 7.0);
  EXPECT_DOUBLE_EQ(ag.x[5], 0.0);
}

TEST(NcclModel, MultiNodeRingIsPacedByTheNics) {
  // 4 nodes x 8 H100, 450 GB/s NVLink, 50 GB/s NIC per GPU: a node pushes 8 x 50 = 400 GB/s < 450 through its
  // NICs, so the inter-node hop is the bottleneck: the bytes over the node's NICs. Latency once per call, as NCCL's
  // tuner counts it (the chunk rounds pipeline behind the NIC transfer): 2 x 4 ring steps cross a node boundary
  // (gamma each), the other 2 x 31 - 8 = 54 stay on NVLink (beta each), whatever the size.
  const NcclHardware hw = nccl_hardware(stepsim::catalog::shipped(), cluster("H100-SXM", 450, 50), 16);
  const uint64_t P = 256ull << 20;
  const NcclTerms t = nccl_terms(hw, CollType::AllReduce, P, {32, 4, 8}, Algorithm::Ring);
  // Each step's latency is NCCL's for the protocol relative to the Ring/Simple reference (3.4 us NVLink, 14 us NET).
  const double sb = nccl_hw_latency_us(stepsim::catalog::shipped().nccl_tuner, HwLink::NvLink, Algorithm::Ring, t.protocol) / 3.4;
  const double sg = nccl_hw_latency_us(stepsim::catalog::shipped().nccl_tuner, HwLink::Net, Algorithm::Ring, t.protocol) / 14.0;
  EXPECT_NEAR(t.x[1], 54.0 * sb, 1e-9);
  EXPECT_NEAR(t.x[2], 8.0 * sg, 1e-9);
  const NcclTerms big = nccl_terms(hw, CollType::AllReduce, 16 * P, {32, 4, 8}, Algorithm::Ring);
  EXPECT_NEAR(big.x[2], 8.0 * nccl_hw_latency_us(stepsim::catalog::shipped().nccl_tuner, HwLink::Net, Algorithm::Ring, big.protocol) / 14.0, 1e-9);
  const double eff = t.protocol == Protocol::Simple ? 1.0 : t.protocol == Protocol::LL128 ? 0.92 : 0.5;
  EXPECT_NEAR(t.x[4], 62.0 / 32 * P / (400e3 * eff), 1e-6);
}

TEST(NcclModel, TreeDepthIsAChainInsideAndTwoLog2NodesAcross) {
  const NcclHardware hw = nccl_hardware(stepsim::catalog::shipped(), cluster("H100-SXM", 450, 50), 16);
  // 128 ranks on 16 nodes of 8: the first chunk crosses 2 x (8-1) = 14 NVLink hops and 2 x log2(16) = 8 NIC hops;
  // the other eta-1 chunks follow at the NIC's pace (8 x 50 GB/s < 450 GB/s). Each hop costs beta (gamma) scaled by
  // NCCL's Tree latency for the protocol relative to the Ring/Simple reference (3.4 us NVLink, 14 us NET).
  for (uint64_t bytes : {1ull << 20, 64ull << 20}) {
    const NcclTerms t = nccl_terms(hw, CollType::AllReduce, bytes, {128, 16, 8}, Algorithm::Tree);
    const double sb = nccl_hw_latency_us(stepsim::catalog::shipped().nccl_tuner, HwLink::NvLink, Algorithm::Tree, t.protocol) / 3.4;
    const double sg = nccl_hw_latency_us(stepsim::catalog::shipped().nccl_tuner, HwLink::Net, Algorithm::Tree, t.protocol) / 14.0;
    EXPECT_NEAR(t.x[1], 14 * sb, 1e-9) << bytes;
    EXPECT_NEAR(t.x[2], (8 + static_cast<double>(t.eta - 1)) * sg, 1e-9) << bytes;
    EXPECT_NEAR(t.x[5], static_cast<double>(bytes) / 1e3, 1e-9);  // the whole buffer is reduced on the way up
  }
}

TEST(NcclModel, AllToAllPaysTheSlowerOfNvlinkAndNic) {
  const NcclHardware hw = nccl_hardware(stepsim::catalog::shipped(), cluster("H100-SXM", 450, 50), 16);
  const uint64_t P = 64ull << 20;
  // 16 ranks over 2 nodes: 7/16 of the buffer over NVLink (7/16 P / 450 GB/s) and 8/16 over the NIC
  // (8/16 P / 50 GB/s): the NIC side is slower.
  const NcclTerms t = nccl_terms(hw, CollType::AllToAll, P, {16, 2, 8});
  EXPECT_EQ(t.algorithm, Algorithm::Direct);
  EXPECT_DOUBLE_EQ(t.x[3], 0.0);
  EXPECT_NEAR(t.x[4], 8.0 / 16 * P / 50e3, 1e-6);
  EXPECT_THROW(nccl_terms(hw, CollType::AllToAll, P, {16, 2, 8}, Algorithm::Ring), InputError);
}

TEST(NcclModel, NothingToDoCostsNothing) {
  const auto m = make_nccl_model(stepsim::catalog::shipped(), cluster("H100-SXM", 450, 50));
  EXPECT_EQ(m->collective_ns(CollType::AllReduce, 0, {8, 1, 8}), 0);
  EXPECT_EQ(m->collective_ns(CollType::AllReduce, 1 << 20, {1, 1, 1}), 0);
  EXPECT_EQ(m->p2p_ns(0, true), 0);
}

TEST(NcclModel, TimeGrowsWithSizeAndShrinksWithBandwidth) {
  const auto slow = make_nccl_model(stepsim::catalog::shipped(), cluster("H100-SXM", 450, 25));
  const auto fast = make_nccl_model(stepsim::catalog::shipped(), cluster("H100-SXM", 450, 50));
  // With the algorithm fixed, time grows with size and a slower NIC is slower. Under auto NCCL's tuner may switch
  // algorithms where its own estimate says so, and that is not always the white-box optimum (8 x 8 H100: tree/LL128
  // at 32 MiB, NVLS-tree at 64 MiB, faster): that is NCCL, so auto is not asserted monotonic.
  for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::NvlsTree}) {
    int64_t prev = 0;
    for (uint64_t s = 1 << 20; s <= (1ull << 30); s *= 2) {
      const int64_t t = fast->estimate(CollType::AllReduce, s, {64, 8, 8}, a).ns;
      EXPECT_GE(t, prev) << name_of(a) << " " << s;
      prev = t;
      EXPECT_GT(slow->estimate(CollType::AllReduce, s, {64, 8, 8}, a).ns, t) << name_of(a) << " " << s;
    }
  }
}

TEST(NcclModel, NvlsOnHopperNodesOnly) {
  const auto h100 = make_nccl_model(stepsim::catalog::shipped(), cluster("H100-SXM", 450, 50));
  EXPECT_EQ(h100->estimate(CollType::AllReduce, 1ull << 30, {8, 1, 8}, Algorithm::Nvls).algorithm, Algorithm::Nvls);
  const auto a100 = make_nccl_model(stepsim::catalog::shipped(), cluster("A100-80GB", 300, 25));
  EXPECT_THROW(a100->estimate(CollType::AllReduce, 1ull << 30, {8, 1, 8}, Algorithm::Nvls), InputError);
}

TEST(NcclModel, RunsAWholeStep) {
  auto job = test::job_from_yaml(test::small_gpt_yaml(2, 2, 4, 32, "", "", ", comm_model: nccl"));
  const auto nccl = sim::run_simulation(stepsim::catalog::shipped(), job, {0});
  job.simulation.comm_model = spec::CommModel::AlphaBeta;
  const auto ab = sim::run_simulation(stepsim::catalog::shipped(), job, {0});
  EXPECT_GT(nccl.result.step_ns, 0);
  // Same compute, different communication: the steps differ, but not by more than the communication could.
  EXPECT_NE(nccl.result.step_ns, ab.result.step_ns);
  EXPECT_LT(std::abs(nccl.result.step_ns - ab.result.step_ns), ab.result.step_ns);
}

TEST(NcclModel, ProfilesCoverTheCatalogAndRefuseBadData) {
  for (const auto& g : stepsim::catalog::shipped().gpus.gpus()) {
    EXPECT_NO_THROW(stepsim::catalog::shipped().nccl_profile(g.name)) << g.name;
  }
  const std::string bad = test::write_temp("nccl_bad.yaml",
                                           "profiles:\n  - {name: x, gpus: [H100-SXM], channels: 16, alpha_us: 1,"
                                           " beta_us: 1, gamma_us: 1, intra_efficiency: 3.0, inter_efficiency: 0.9,"
                                           " reduce_GBps: 1, source: s}\n");
  try {
    NcclProfiles::load(bad, stepsim::catalog::shipped().gpus);
    FAIL() << "accepted an efficiency above 1";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("intra_efficiency"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stepsim::cost

namespace stepsim::cost {
namespace {

TEST(NcclParamTable, PicksTheNodeClassAndInterpolatesChunkBands) {
  NcclParams d;
  d.alpha_us = 1;
  NcclParamTable table(d);
  EXPECT_EQ(table.lookup(4, 1 << 20).alpha_us, 1);  // nothing calibrated: defaults
  NcclParams one_node, four_lo, four_hi;
  one_node.alpha_us = 10;
  four_lo.alpha_us = 20;
  four_lo.intra_efficiency = 0.5;
  four_hi.alpha_us = 40;
  four_hi.intra_efficiency = 1.0;
  table.add({1, 0, one_node});
  table.add({4, 65536, four_lo});
  table.add({4, 1 << 20, four_hi});
  EXPECT_EQ(table.lookup(1, 1 << 20).alpha_us, 10);  // exact node class, all-sizes row
  EXPECT_EQ(table.lookup(2, 1 << 20).alpha_us, 10);  // largest calibrated node count <= 2 is 1
  EXPECT_EQ(table.lookup(64, 1 << 20).alpha_us, 40);  // 4 nodes serve bigger groups
  EXPECT_EQ(table.lookup(64, 1024).alpha_us, 20);     // clamped below the smallest band
  // 256 KiB is halfway between 64 KiB and 1 MiB in log2: alpha halfway, 1/efficiency halfway (1/0.75 x 1.5...).
  const NcclParams mid = table.lookup(4, 262144);
  EXPECT_DOUBLE_EQ(mid.alpha_us, 30);
  EXPECT_DOUBLE_EQ(1.0 / mid.intra_efficiency, (2.0 + 1.0) / 2);
}

}  // namespace
}  // namespace stepsim::cost

namespace stepsim::cost {
namespace {

// NVLS-tree (Echo Table 5's H800 cluster: 4 nodes x 8, 200 GB/s NVLink, 8 x 400 Gb/s NICs): the NVSwitch reduction
// moves 9/8 P through the busier direction of each GPU's port (its whole buffer loaded, the reduced eighth stored
// and everyone's eighths received) at nvlsEfficiency 0.85 (9/8 P / 170 GB/s) and the tree moves 2 P through the
// node's NICs (2 P / 400 GB/s); they pipeline, so only the slower one counts. With 16 NICs the tree would pace it.
TEST(NcclModel, NvlsTreeIsPacedByItsSlowerStage) {
  const double P = 256.0 * (1 << 20);
  const NcclHardware hw = nccl_hardware(stepsim::catalog::shipped(), cluster("H800", 200, 50), 16);
  const NcclTerms t = nccl_terms(hw, CollType::AllReduce, static_cast<uint64_t>(P), {32, 4, 8}, Algorithm::NvlsTree);
  EXPECT_EQ(t.algorithm, Algorithm::NvlsTree);
  EXPECT_NEAR(t.x[3], 9.0 / 8 * P / (200e3 * 0.85), 1e-6);
  EXPECT_EQ(t.x[4], 0);
  const NcclTerms slow_nic = nccl_terms(nccl_hardware(stepsim::catalog::shipped(), cluster("H800", 200, 12.5), 16), CollType::AllReduce,
                                        static_cast<uint64_t>(P), {32, 4, 8}, Algorithm::NvlsTree);
  EXPECT_EQ(slow_nic.x[3], 0);
  EXPECT_NEAR(slow_nic.x[4], 2 * P / (8 * 12.5e3), 1e-6);
  // Under auto NCCL's tuner picks NVLS-tree for 256 MiB here (its NVSwitch term beats the NVLink-capped ring).
  EXPECT_EQ(nccl_terms(hw, CollType::AllReduce, static_cast<uint64_t>(P), {32, 4, 8}, Algorithm::Auto).algorithm,
            Algorithm::NvlsTree);
}

// CollNetDirect (SHARP) on 4 nodes x 8 H100, 450 GB/s NVLink, 8 x 50 GB/s NICs, 256 MiB: the node's GPUs
// reduce-scatter and all-gather over NVLink, 2 x 7/8 P through each port (P x 1.75 / 450 GB/s), while the node
// sends P up and gets P back through its NICs (P / 400 GB/s): the NVLink stage is slower and paces the call. One
// network round trip (gamma x 31/14, NCCL's CollNetDirect/NET latency over Ring/Simple's) and one NVLink hop each
// way (beta x 2 x 3.7/3.4). The chain variant moves 2 P through every port and is 2 x 7 NVLink hops deep.
TEST(NcclModel, CollNetIsPacedByTheSlowerOfNvlinkAndTheNics) {
  const double P = 256.0 * (1 << 20);
  spec::ClusterSpec c = cluster("H100-SXM", 450, 50);
  EXPECT_THROW(nccl_terms(nccl_hardware(stepsim::catalog::shipped(), c, 16), CollType::AllReduce, static_cast<uint64_t>(P), {32, 4, 8},
                          Algorithm::CollNetDirect),
               InputError);  // no SHARP: NCCL cannot run CollNet
  c.network.sharp = true;
  const NcclHardware hw = nccl_hardware(stepsim::catalog::shipped(), c, 16);
  const NcclTerms d = nccl_terms(hw, CollType::AllReduce, static_cast<uint64_t>(P), {32, 4, 8}, Algorithm::CollNetDirect);
  EXPECT_EQ(d.algorithm, Algorithm::CollNetDirect);
  EXPECT_NEAR(d.x[3], 1.75 * P / 450e3, 1e-6);
  EXPECT_EQ(d.x[4], 0);
  EXPECT_NEAR(d.x[1], 2 * 3.7 / 3.4, 1e-12);
  EXPECT_NEAR(d.x[2], 31.0 / 14.0, 1e-12);
  EXPECT_NEAR(d.x[5], 7.0 / 8.0 * P / 1e3, 1e-6);
  const NcclTerms ch = nccl_terms(hw, CollType::AllReduce, static_cast<uint64_t>(P), {32, 4, 8}, Algorithm::CollNetChain);
  EXPECT_NEAR(ch.x[3], 2 * P / 450e3, 1e-6);
  EXPECT_NEAR(ch.x[1], 14 * 2.8 / 3.4, 1e-12);
  // Slow NICs (8 x 12.5 GB/s = 100 GB/s per node): now the network stage paces it, P / 100 GB/s.
  c.inter_node.bandwidth_GBps = 12.5;
  const NcclTerms slow = nccl_terms(nccl_hardware(stepsim::catalog::shipped(), c, 16), CollType::AllReduce, static_cast<uint64_t>(P), {32, 4, 8},
                                    Algorithm::CollNetDirect);
  EXPECT_EQ(slow.x[3], 0);
  EXPECT_NEAR(slow.x[4], P / 100e3, 1e-6);
  // Auto with SHARP on Hopper NVSwitch nodes: NVLS spans the nodes and beats NVLS-tree's 2 P through the NICs.
  c.inter_node.bandwidth_GBps = 50;
  const auto sharp = make_nccl_model(stepsim::catalog::shipped(), c), plain = make_nccl_model(stepsim::catalog::shipped(), cluster("H100-SXM", 450, 50));
  const auto e = sharp->estimate(CollType::AllReduce, static_cast<uint64_t>(P), {32, 4, 8});
  EXPECT_EQ(e.algorithm, Algorithm::Nvls);
  EXPECT_LT(e.ns, plain->estimate(CollType::AllReduce, static_cast<uint64_t>(P), {32, 4, 8}).ns);
}

}  // namespace
}  // namespace stepsim::cost

namespace stepsim::cost {
namespace {

// cluster.inter_node.transport: AWS EFA (libfabric through aws-ofi-nccl) pays data/nccl.yaml's net_latency_scale (5)
// times NCCL's network step latency; nothing else changes, and InfiniBand / RoCE keep NCCL's own constants.
TEST(NcclModel, EfaTransportScalesTheNetworkStepLatency) {
  EXPECT_DOUBLE_EQ(stepsim::catalog::shipped().nccl.net_latency_scale("ib"), 1.0);
  EXPECT_DOUBLE_EQ(stepsim::catalog::shipped().nccl.net_latency_scale("roce"), 1.0);
  EXPECT_DOUBLE_EQ(stepsim::catalog::shipped().nccl.net_latency_scale("efa"), 5.0);
  spec::ClusterSpec ib;
  ib.gpu = "H100-SXM";
  ib.num_gpus = 16;
  ib.intra_node.bandwidth_GBps = 450;
  ib.inter_node.bandwidth_GBps = 50;
  spec::ClusterSpec efa = ib;
  efa.inter_node.transport = "efa";
  for (uint64_t bytes : {uint64_t{8}, uint64_t{1} << 20, uint64_t{1} << 30}) {
    const NcclTerms a = nccl_terms(nccl_hardware(stepsim::catalog::shipped(), ib, 16), CollType::AllReduce, bytes, {16, 2, 8});
    const NcclTerms b = nccl_terms(nccl_hardware(stepsim::catalog::shipped(), efa, 16), CollType::AllReduce, bytes, {16, 2, 8});
    ASSERT_EQ(a.algorithm, b.algorithm) << bytes;
    EXPECT_GT(a.x[2], 0.0) << bytes;
    EXPECT_DOUBLE_EQ(b.x[2], 5.0 * a.x[2]) << bytes;
    for (int i : {0, 1, 3, 4, 5}) EXPECT_DOUBLE_EQ(b.x[i], a.x[i]) << bytes << " term " << i;
  }
  EXPECT_DOUBLE_EQ(nccl_p2p_terms(nccl_hardware(stepsim::catalog::shipped(), efa, 16), 1 << 20, false).x[2], 5.0);
  // In a job: the key is read, checked, and changes a multi-node step only through the network latency.
  const std::string base = test::small_gpt_yaml(1, 1, 16, 64);
  std::string with_efa = base;
  with_efa.replace(with_efa.find("latency_us: 5}"), 14, "latency_us: 5, transport: efa}");
  EXPECT_EQ(test::job_from_yaml(with_efa).cluster.inter_node.transport, "efa");
  // A section with only the transport keeps the documented defaults (400 Gb/s per GPU, 5 us): the user's
  // `--set cluster.inter_node.transport=efa` must not need the bandwidth restated. Likewise intra_node's GPU rate.
  std::string partial = base;
  partial.replace(partial.find("inter_node: {bandwidth_Gbps: 400, latency_us: 5}"), 48, "inter_node: {transport: efa}");
  partial.replace(partial.find("intra_node: {bandwidth_GBps: 450, latency_us: 1}"), 48, "intra_node: {latency_us: 2}");
  const spec::JobSpec pj = test::job_from_yaml(partial);
  EXPECT_EQ(pj.cluster.inter_node.transport, "efa");
  EXPECT_DOUBLE_EQ(pj.cluster.inter_node.bandwidth_GBps, 50.0);
  EXPECT_DOUBLE_EQ(pj.cluster.inter_node.latency_us, 5.0);
  EXPECT_DOUBLE_EQ(pj.cluster.intra_node.bandwidth_GBps, 450.0);  // the H100's NVLink from data/gpus.yaml
  EXPECT_DOUBLE_EQ(pj.cluster.intra_node.latency_us, 2.0);
  std::string bad = base;
  bad.replace(bad.find("latency_us: 5}"), 14, "latency_us: 5, transport: infiniband}");
  const std::string msg = test::job_error(bad);
  EXPECT_NE(msg.find("cluster.inter_node.transport"), std::string::npos) << msg;
}

}  // namespace
}  // namespace stepsim::cost
