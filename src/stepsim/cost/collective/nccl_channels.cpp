#include "stepsim/cost/collective/nccl_channels.hpp"

#include <algorithm>
#include <cmath>
#include <span>

namespace stepsim::cost {
namespace {

// NCCL 2.30's inter-node search speeds in GB/s per channel (src/graph/search.cc), by compute capability. Only the
// first entries matter here: the search keeps the first speed one NIC carries unless a lower one found more
// bandwidth in total, which one channel per NIC at a speed within 2x cannot.
constexpr double kSpeedsSm100[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                   20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kSpeedsSm90[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                  15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kSpeedsOlder[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                   7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr int kMaxGraphChannels = 32;  // a graph's maxChannels: MAXCHANNELS / 2
constexpr int kMaxChannels = 64;       // MAXCHANNELS

std::span<const double> speeds_of(CompCap cc) {
  if (cc == CompCap::Blackwell) return kSpeedsSm100;
  if (cc == CompCap::Hopper) return kSpeedsSm90;
  return kSpeedsOlder;
}

}  // namespace

int lone_gpu_channels(CompCap cc, int local_nics, double nic_GBps, int nodes) {
  const std::span<const double> speeds = speeds_of(cc);
  double speed = speeds.back();
  for (double s : speeds) {
    if (s <= nic_GBps) {
      speed = s;
      break;
    }
  }
  const int per_nic = std::max(1, static_cast<int>(std::floor(nic_GBps / speed)));
  int graph = std::min(kMaxGraphChannels, std::max(1, local_nics) * per_nic);
  // ncclTopoDupChannels: ccMin > 80 is Ada and later; Ada is counted with Ampere here, as NCCL's tuner does.
  const bool after_ampere = cc == CompCap::Hopper || cc == CompCap::Blackwell;
  if (speed >= 25.0 && !(after_ampere && speed < 50.0 && graph > 4)) {
    const int dup = std::min(2 * graph, kMaxGraphChannels);
    speed /= static_cast<double>((dup + graph - 1) / graph);
    graph = dup;
  }
  int channels = std::min(kMaxChannels, 2 * graph);
  if (after_ampere && nodes > 1 && speed > 45.0 && channels < 16) channels = std::min(kMaxChannels, 2 * channels);
  return channels;
}

}  // namespace stepsim::cost
