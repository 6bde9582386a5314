#pragma once
// SM-share overlap model (simulation.overlap_model: sm_share): NCCL runs one thread block per channel, each on its
// own SM for the kernel's whole life, so a compute kernel beside communication kernels holding H SMs in all runs on
// the SMs left: slowdown s = H / (SMs - H). Measured on an H100 (data/measurements/h100-sxm/contention.csv): an
// 8192^3 GEMM beside a copy kernel of 16 / 32 thread blocks ran 1.13x / 1.23x slower, where 132/116 = 1.14 and
// 132/100 = 1.32. docs/OVERLAP.md, section 3.
#include <memory>

#include "stepsim/cost/overlap/overlap_model.hpp"

namespace stepsim::cost {

struct SmShareParams {
  int sm_count = 0;               // SMs of the GPU
  int collective_channels = 16;   // a collective's channels when the collective model does not say (alpha-beta)
  int p2p_channels = 2;           // a send/receive's (NCCL's p2p channels per peer)
};

std::unique_ptr<OverlapModel> make_sm_share_overlap_model(const SmShareParams& p);

}  // namespace stepsim::cost
