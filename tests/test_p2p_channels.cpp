// NCCL's point-to-point channels to a peer across the network (issue 45 item 4): how many a peer gets
// (src/graph/paths.cc), how a large communicator halves them, how a send is striped (src/enqueue.cc), and what that
// does to nccl-tests' sendrecv.
#include <string>

#include <gtest/gtest.h>

#include "stepsim/api/comm.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/cost/collective/nccl_model.hpp"

namespace stepsim {
namespace {

api::CommOutput sendrecv(int gpus, const std::string& sizes, const std::string& model = "nccl") {
  api::CommOptions o;
  o.collective = "sendrecv";
  o.gpus = gpus;
  o.gpus_per_node = 8;
  o.sizes = sizes;
  o.model = model;
  o.store = "none";
  return api::comm(o);
}

// By hand, H100 nodes with one 400 Gb/s (50 GB/s) NIC per GPU and NCCL's 16 channels: a network peer gets
// ceil(50 / 14) = 4 channels, halved while 4 x ceil(ranks / 8) > 16. 16 ranks: 4 x 2 = 8, four channels (56 GB/s, above
// the NIC: the NIC's 50 binds); 40 ranks: 4 x 5 = 20, then 2 x 5 = 10, two channels (28 GB/s); 80 ranks: 40, 20, then
// 1 x 10, one channel (14 GB/s). A 200 KiB send has two 128 KiB chunks: two channels at most.
TEST(P2pChannels, APeerAcrossTheNetworkGetsFewerChannelsInALargeCommunicator) {
  const catalog::Catalog& cat = catalog::shipped();
  spec::ClusterSpec c;
  c.num_gpus = 80;
  const cost::NcclHardware hw = cost::nccl_hardware(cat, c, 16);
  EXPECT_EQ(hw.net_peer_channels, 4);
  EXPECT_EQ(cost::p2p_net_channels(hw, 1 << 30, 16), 4);
  EXPECT_EQ(cost::p2p_net_channels(hw, 1 << 30, 40), 2);
  EXPECT_EQ(cost::p2p_net_channels(hw, 1 << 30, 80), 1);
  EXPECT_EQ(cost::p2p_net_channels(hw, 200 << 10, 16), 2);
  EXPECT_EQ(cost::p2p_net_channels(hw, 1 << 30, 0), 4);  // the communicator unknown: no halving
  // NICs of its own: AWS p5's four 100 Gb/s EFA NICs per GPU get one channel each (max(4, ceil(50 / 14)) = 4); two
  // 200 Gb/s (p5en) need four for their 50 GB/s; A3 High's 200 Gb/s NIC shared by two GPUs, ceil(25 / 14) = 2.
  c.network.nics_per_node = 32;
  c.network.nic_GBps = 12.5;
  EXPECT_EQ(cost::nccl_hardware(cat, c, 16).net_peer_channels, 4);
  c.network.nics_per_node = 16;
  c.network.nic_GBps = 25;
  EXPECT_EQ(cost::nccl_hardware(cat, c, 16).net_peer_channels, 4);
  c.network.nics_per_node = 4;
  EXPECT_EQ(cost::nccl_hardware(cat, c, 16).net_peer_channels, 2);

  const double nic = sendrecv(16, "1G").rows.at(0).busbw_GBps;
  const double two = sendrecv(40, "1G").rows.at(0).busbw_GBps;
  const double one = sendrecv(80, "1G").rows.at(0).busbw_GBps;
  EXPECT_NEAR(two / one, 2.0, 0.01);
  EXPECT_NEAR(nic / one, 50.0 / 14.0, 0.05);
  EXPECT_EQ(sendrecv(80, "1G").rows.at(0).channels, 1);
  // The development sweep's 10 x 8 H100 cluster measured 15.2 GB/s where the ring collectives reach 320 GB/s bus
  // bandwidth (shared/data/nccl-tests/published_sweeps.csv): one channel's rate, not the NIC's.
  EXPECT_GT(one, 12.0);
  EXPECT_LT(one, 15.2);
  // Inside one node a send is NVLink's, whatever the communicator.
  EXPECT_EQ(sendrecv(8, "1G").rows.at(0).channels, 1);
}

// The other models have no channels: the communicator's size changes nothing there.
TEST(P2pChannels, ModelsWithoutChannelsAreUnchanged) {
  for (const std::string model : {"alpha-beta", "flow"}) {
    EXPECT_DOUBLE_EQ(sendrecv(16, "1G", model).rows.at(0).time_us, sendrecv(80, "1G", model).rows.at(0).time_us)
        << model;
  }
}

}  // namespace
}  // namespace stepsim
