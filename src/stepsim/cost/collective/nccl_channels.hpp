// How many channels NCCL builds for a communicator, where that depends on the communicator's shape rather than on the
// node type alone (data/nccl.yaml's `channels` holds what NCCL builds for a whole node).
#pragma once

#include "stepsim/cost/collective/nccl_tuner.hpp"

namespace stepsim::cost {

// The channels of a communicator that has one GPU on each of `nodes` nodes (a data-parallel group of a TP-8 job,
// nccl-tests with one GPU per node), the GPU reaching the network through `local_nics` NICs of `nic_GBps` each.
// NCCL's graph search (src/graph/search.cc, ncclTopoCompute) can route such a ring only through those NICs: it
// takes the fastest of its speeds per compute capability (sm90SpeedArrayInter, ...) that one NIC carries, one
// channel per NIC at that speed; ncclTopoDupChannels doubles them at 25 GB/s or more (halving each one's speed);
// ncclTopoPostset (src/graph/connect.cc) doubles every communicator's channels, and again on sm90 and later across
// nodes while a channel still carries more than 45 GB/s and there are fewer than 16.
int lone_gpu_channels(CompCap cc, int local_nics, double nic_GBps, int nodes);

}  // namespace stepsim::cost
