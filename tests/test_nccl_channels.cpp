// The channels NCCL builds for a communicator with one GPU per node (issue 45 item 4): its graph search can only go
// through the GPU's own NICs, so the node's channel count (data/nccl.yaml, 16 on an 8-GPU H100 node) does not apply.
#include <string>

#include <gtest/gtest.h>

#include "stepsim/api/comm.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/cost/collective/nccl_channels.hpp"
#include "stepsim/cost/collective/nccl_model.hpp"

namespace stepsim {
namespace {

using cost::CompCap;

api::CommOutput one_gpu_nodes(const std::string& collective, int gpus, const std::string& sizes) {
  api::CommOptions o;
  o.collective = collective;
  o.gpus = gpus;
  o.gpus_per_node = 1;
  o.sizes = sizes;
  o.model = "nccl";
  o.store = "none";
  return api::comm(o);
}

// Each case worked through src/graph/search.cc and connect.cc by hand:
// - A100 with one 200 Gb/s NIC (25 GB/s), 2 nodes: the first speed one NIC carries is 24: one channel; below 25 GB/s
//   it is not duplicated; Postset doubles it: 2. NCCL 2.16.5 printed exactly this for such a pair
//   (shared/data/real/nccl-logs/nvidia-nccl-tests-issue-350.log: "Pattern 4, crossNic 0, nChannels 1, bw
//   24.000000/24.000000", "Channel 00/02", "2 coll channels, 2 p2p channels, 2 p2p channels per peer").
// - H100 with one 400 Gb/s NIC (50 GB/s): speed 48, one channel, duplicated (48 >= 25) to two of 24, doubled: 4.
// - H100 with four 100 Gb/s EFA NICs of its own (12.5 GB/s): speed 12, four channels, not duplicated, doubled: 8.
// - B200 with one 800 Gb/s NIC (100 GB/s): speed 96, one channel, duplicated to two of 48, doubled to 4; 48 GB/s a
//   channel is above 45 with fewer than 16 channels across nodes: doubled again, 8.
TEST(NcclChannels, ALoneGpuGetsTheChannelsItsNicsCarry) {
  EXPECT_EQ(cost::lone_gpu_channels(CompCap::Ampere, 1, 25.0, 2), 2);
  EXPECT_EQ(cost::lone_gpu_channels(CompCap::Hopper, 1, 50.0, 10), 4);
  EXPECT_EQ(cost::lone_gpu_channels(CompCap::Hopper, 4, 12.5, 2), 8);
  EXPECT_EQ(cost::lone_gpu_channels(CompCap::Blackwell, 1, 100.0, 2), 8);
  EXPECT_EQ(cost::lone_gpu_channels(CompCap::Blackwell, 1, 100.0, 1), 4);  // one node: no network doubling
}

// nccl-tests sendrecv on ten H100 nodes using one GPU each (the development sweep's 10 x 1 layout): 4 channels, and
// with 10 ranks each peer gets 4, halved while 4 x ceil(10 / 8) > 4: 2 channels of 14 GB/s, 28 GB/s where the NIC
// carries 48; x the H100 profile's inter_efficiency 0.96 (data/nccl.yaml): 26.9 GB/s. Measured: 24.9 GB/s (shared/data/nccl-tests/published_sweeps.csv). With the node's 16 channels the
// model gave the NIC's rate, twice the measured one.
TEST(NcclChannels, SendRecvOnOneGpuNodesRunsOnTwoChannels) {
  const api::CommOutput out = one_gpu_nodes("sendrecv", 10, "1G");
  EXPECT_EQ(out.rows.at(0).channels, 2);
  EXPECT_NEAR(out.rows.at(0).busbw_GBps, 28.0 * 0.96, 0.1);
  const catalog::Catalog& cat = catalog::shipped();
  spec::ClusterSpec c;
  c.num_gpus = 10;
  c.gpus_per_node = 1;
  const cost::NcclHardware hw = cost::nccl_hardware(cat, c, 16);
  EXPECT_EQ(hw.tuner.channels, 4);
  EXPECT_EQ(cost::p2p_net_channels(hw, 1 << 30, 10), 2);
}

// A data-parallel group of a TP-8 job has one GPU on each node: NCCL builds it the lone GPU's channels, on a cluster
// of 8-GPU nodes too. An all-reduce there uses at most 4 channels; across the same nodes with all 8 GPUs, 16.
TEST(NcclChannels, AGroupWithOneGpuPerNodeUsesTheLoneGpusChannels) {
  const catalog::Catalog& cat = catalog::shipped();
  spec::ClusterSpec c;
  c.num_gpus = 64;
  c.gpus_per_node = 8;
  const cost::NcclHardware hw = cost::nccl_hardware(cat, c, 16);
  EXPECT_EQ(hw.lone_gpu_channels, 4);
  const cost::NcclTerms dp = cost::nccl_terms(hw, workload::CollType::AllReduce, 1ull << 30, {8, 8, 1});
  const cost::NcclTerms all = cost::nccl_terms(hw, workload::CollType::AllReduce, 1ull << 30, {64, 8, 8});
  EXPECT_LE(dp.channels, 4);
  EXPECT_GT(all.channels, 4);
  EXPECT_EQ(one_gpu_nodes("all_reduce", 10, "1G").rows.at(0).channels, 4);
}

}  // namespace
}  // namespace stepsim
