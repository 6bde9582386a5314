// NCCL model across GPU generations (issue 14 item 1): NVLS traffic per switch port, Hopper's ring collectives
// symmetric, and the model against public measurements it was not fitted on. Expected values are closed forms
// from NCCL's constants (shared/data/nccl_model_facts.md) or the published tables, never the model's own output.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "stepsim/cost/collective/nccl_model.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::cost {
namespace {

using workload::CollType;

spec::ClusterSpec node(const std::string& gpu, double nvlink_GBps) {
  spec::ClusterSpec c;
  c.gpu = gpu;
  c.num_gpus = 8;
  c.gpus_per_node = 8;
  c.intra_node.bandwidth_GBps = nvlink_GBps;
  c.inter_node.bandwidth_GBps = 50;
  return c;
}

constexpr uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
const GroupGeometry kNode{8, 1, 8};

double busbw_GBps(CollType c, uint64_t bytes, int64_t ns) {
  const double factor = c == CollType::AllReduce ? 2.0 * 7 / 8 : 7.0 / 8;
  return static_cast<double>(bytes) / static_cast<double>(ns) * factor;  // B/ns = GB/s
}

// NVLS all-reduce on one node: each GPU load-reduces its 1/8 slice (all of P leaves its port) and stores the
// result (P/8 out, P in), so the port's busier direction carries 9/8 P. 8 GiB: NCCL keeps the 128 KiB NVLS
// chunk (8 GiB >= 64 x 16 channels x 8 heads x 128 KiB), so a GPU's 1 GiB slice takes 1 GiB / (16 x 128 KiB) =
// 512 rounds of one NVLink step each, after NCCL's 25 us NVLS latency (25/3.4 ring steps); NCCL's NVLS base
// latency is 0, so no alpha.
TEST(NcclGenerations, NvlsAllReduceTerms) {
  const NcclHardware hw = nccl_hardware(stepsim::catalog::shipped(), node("H100-SXM", 450), 16);
  const NcclTerms t = nccl_terms(hw, CollType::AllReduce, 8 * GiB, kNode, Algorithm::Nvls);
  ASSERT_EQ(t.algorithm, Algorithm::Nvls);
  EXPECT_DOUBLE_EQ(t.x[0], 0.0);
  EXPECT_NEAR(t.x[1], 25.0 / 3.4 + 512, 1e-9);
  EXPECT_NEAR(t.x[3], 9.0 / 8 * 8 * GiB / (450e3 * 0.85), 1e-6);
  EXPECT_EQ(t.x[5], 0.0);  // the switch reduces
  // 1 MiB: below 2 x (16 x 8 x 128 KiB) NCCL drops to 16 KiB chunks: 128 KiB per GPU is one round.
  const NcclTerms s = nccl_terms(hw, CollType::AllReduce, 1 * MiB, kNode, Algorithm::Nvls);
  EXPECT_NEAR(s.x[1], 25.0 / 3.4 + 1, 1e-9);
}

// NVLS reduce-scatter is the load half (P out of each port), all-gather the store half (P into each port).
TEST(NcclGenerations, NvlsAllGatherAndReduceScatterMoveTheBufferOnce) {
  const NcclHardware hw = nccl_hardware(stepsim::catalog::shipped(), node("H100-SXM", 450), 16);
  for (CollType c : {CollType::AllGather, CollType::ReduceScatter}) {
    const NcclTerms t = nccl_terms(hw, c, 1 * GiB, kNode, Algorithm::Nvls);
    EXPECT_NEAR(t.x[3], 1.0 * GiB / (450e3 * 0.85), 1e-6) << workload::name_of(c);
  }
}

// With fewer channels (NCCL drops them for small buffers) only their share of the links is driven: 32 KiB ring
// LL on 8 A100 keeps one of 16 channels (32 KiB < 2 x 512 threads x 8 B x 8 ranks), so the 2(n-1)/n P carried per
// link moves at LL's half payload over 1/16 of 300 GB/s.
TEST(NcclGenerations, FewerChannelsDriveLessOfTheLink) {
  const NcclHardware hw = nccl_hardware(stepsim::catalog::shipped(), node("A100-80GB", 300), 16);
  const NcclTerms t = nccl_terms(hw, CollType::AllReduce, 32 * KiB, kNode, Algorithm::Ring);
  ASSERT_EQ(t.protocol, Protocol::LL);
  ASSERT_EQ(t.channels, 1);
  EXPECT_NEAR(t.x[3], 14.0 / 8 * 32 * KiB / (300e3 / 16 * 0.5), 1e-6);
}

std::unique_ptr<CollectiveModel> shipped(const spec::ClusterSpec& c) {
  const NcclProfile& p = stepsim::catalog::shipped().nccl_profile(c.gpu);
  NcclParamTable table(p.params);
  for (const auto& row : p.bands) table.add(row);
  return make_nccl_model(stepsim::catalog::shipped(), c, p, std::move(table));
}

// NCCL's maintainers (nccl-tests issue 212, shared/data/nccl-tests/h100-8gpu-expected.csv): on 8 x H100 ring
// all-reduce, all-gather and reduce-scatter all reach ~370 GB/s busbw and NVLS all-reduce ~480 (a user's 476 was
// "in range", issue 290). Within 5% at 8 GiB; reduce-scatter and all-gather equal, as NCCL runs them.
TEST(NcclGenerations, H100PlateausMatchTheMaintainers) {
  const auto m = shipped(node("H100-SXM", 450));
  const uint64_t S = 8 * GiB;
  const auto bus = [&](CollType c, Algorithm a) { return busbw_GBps(c, S, m->estimate(c, S, kNode, a).ns); };
  const double ar_nvls = bus(CollType::AllReduce, Algorithm::Auto);
  EXPECT_EQ(m->estimate(CollType::AllReduce, S, kNode, Algorithm::Auto).algorithm, Algorithm::Nvls);
  EXPECT_NEAR(ar_nvls, 480, 0.05 * 480);
  EXPECT_NEAR(ar_nvls, 476, 0.05 * 476);
  const double ag = bus(CollType::AllGather, Algorithm::Auto), rs = bus(CollType::ReduceScatter, Algorithm::Auto);
  EXPECT_NEAR(ag, 370, 0.05 * 370);
  EXPECT_NEAR(rs, 370, 0.05 * 370);
  EXPECT_NEAR(bus(CollType::AllReduce, Algorithm::Ring), 370, 0.05 * 370);
  EXPECT_NEAR(rs / ag, 1.0, 1e-3);
}

// Held out: 8 x H200 (NVLink4, 450 GB/s per GPU), Azure ND H200 v5 (github.com/Azure/AI-benchmarking-guide,
// Azure_Results/ND_H200_v5_results.md, "NCCL Bandwidth"): all_reduce_perf -g 8 with NCCL_ALGO=NVLS (its
// Benchmarks/NVIDIA/NCCLBandwidth.py), NCCL 2.20.5, in-place busbw per size. Nothing in data/nccl.yaml was
// fitted to it. time_us = S x 2(n-1)/n / busbw.
const std::vector<std::pair<uint64_t, double>> kH200NvlsBusbw = {
    {32 * KiB, 1.84},   {64 * KiB, 3.72},   {128 * KiB, 7.39},  {256 * KiB, 14.75}, {512 * KiB, 29.38},
    {1 * MiB, 52.96},   {2 * MiB, 88.78},   {4 * MiB, 138.44},  {8 * MiB, 181.94},  {16 * MiB, 240.41},
    {32 * MiB, 300.91}, {64 * MiB, 368.11}, {128 * MiB, 412.45}, {256 * MiB, 432.24}, {512 * MiB, 442.72},
    {1 * GiB, 467.58},  {2 * GiB, 472.57},  {4 * GiB, 477.41},  {8 * GiB, 479.98}};

double mean_abs_error(const CollectiveModel& m, Algorithm a, uint64_t from) {
  double sum = 0;
  int n = 0;
  for (const auto& [bytes, busbw] : kH200NvlsBusbw) {
    if (bytes < from) continue;
    const double measured_ns = static_cast<double>(bytes) * 1.75 / busbw;
    const double predicted_ns = static_cast<double>(m.estimate(CollType::AllReduce, bytes, kNode, a).ns);
    sum += std::abs(predicted_ns - measured_ns) / measured_ns;
    ++n;
  }
  return sum / n;
}

TEST(NcclGenerations, H200HeldOutWithin10Percent) {
  const auto m = shipped(node("H200", 450));
  // The measurement forced NVLS: compare with NVLS over the whole sweep (32 KiB - 8 GiB).
  EXPECT_LT(mean_abs_error(*m, Algorithm::Nvls, 32 * KiB), 0.10);
  // The command (auto, 1 MiB up): the tuner picks NVLS from 2 MiB, ring LL at 1 MiB.
  EXPECT_LT(mean_abs_error(*m, Algorithm::Auto, 1 * MiB), 0.10);
}

}  // namespace
}  // namespace stepsim::cost

namespace stepsim::cost {
namespace {

// GB200 NVL72: the NVLink domain of 72 GPUs is one node. Its NVLS all-reduce moves 73/72 P through each switch port at
// 900 GB/s x 0.802 (NCCL's NVLink5 rate) x 0.60 (the blackwell profile's measured NVLS port efficiency; NCCL's tuner
// keeps its own 0.74 to choose the algorithm): 8 GiB in 73/72 x 8 GiB / 433.1 GB/s = 20.1 ms plus the rounds.
// CoreWeave's one-rack nccl-tests (data/nccl-tests-public, cw-gb200-1rack) measured 20,299 us out-of-place, the point
// the efficiency was read from: in-sample, so this pins the arithmetic, not the accuracy.
TEST(NcclGenerations, Gb200Nvl72IsOneNvlinkDomain) {
  spec::ClusterSpec c = node("GB200", 900);
  c.num_gpus = 72;
  c.gpus_per_node = 72;
  const auto model = make_nccl_model(stepsim::catalog::shipped(), c);
  const GroupGeometry rack{72, 1, 72};
  const CollectiveEstimate e = model->estimate(CollType::AllReduce, 8 * GiB, rack, Algorithm::Auto, std::nullopt);
  EXPECT_EQ(e.algorithm, Algorithm::Nvls);
  const double port_s = 73.0 / 72 * 8 * GiB / (900e9 * 0.802 * 0.60);
  EXPECT_GT(static_cast<double>(e.ns) * 1e-9, port_s);
  EXPECT_LT(static_cast<double>(e.ns) * 1e-9, port_s * 1.03);  // + 57 rounds of one NVLink step
  EXPECT_NEAR(static_cast<double>(e.ns) * 1e-3 / 20299.0 - 1, 0.0, 0.03);
  // The tuner still decides with NCCL's 0.74, so the choice is NCCL's own; 8 x B200 gets the same port efficiency.
  const auto b200 = make_nccl_model(stepsim::catalog::shipped(), node("B200", 900));
  const double bus = busbw_GBps(CollType::AllReduce, 8 * GiB,
                                b200->estimate(CollType::AllReduce, 8 * GiB, kNode, Algorithm::Nvls, std::nullopt).ns);
  EXPECT_LT(bus, 900 * 0.802 * 0.60 * 8 / 9 * 1.75);  // the port-rate bound: 674 GB/s busbw
  EXPECT_GT(bus, 0.85 * 900 * 0.802 * 0.60 * 8 / 9 * 1.75);
}

}  // namespace
}  // namespace stepsim::cost

namespace stepsim::cost {
namespace {

// A GB200 job whose node is a 4-GPU tray is told that an NVL72 rack is one NVLink domain; a 72-GPU node is not.
TEST(NcclGenerations, Gb200TrayAsNodeIsNoted) {
  auto notes_of = [](int gpus_per_node) {
    std::string y = test::small_gpt_yaml(2, 2, 2, 8);
    y.replace(y.find("gpu: H100-SXM"), 13, "gpu: GB200");
    y.replace(y.find("gpus_per_node: 8"), 16, "gpus_per_node: " + std::to_string(gpus_per_node));
    y.replace(y.find("bandwidth_GBps: 450"), 19, "bandwidth_GBps: 900");
    return sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(y), {0}).notes;
  };
  const auto tray = notes_of(4);
  ASSERT_EQ(tray.size(), 1u);
  EXPECT_NE(tray[0].find("NVLink domain"), std::string::npos) << tray[0];
  EXPECT_TRUE(notes_of(8).empty());  // one node holds the whole job
}

}  // namespace
}  // namespace stepsim::cost
