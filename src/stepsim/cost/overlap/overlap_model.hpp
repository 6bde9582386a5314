#pragma once
// OverlapModel: how much slower a compute kernel runs while communication kernels share its GPU (Echo §2.3 and
// §6; MoFa's time-increase coefficients). The engine asks it whenever the set of communication ops in flight on a
// rank changes and advances the running compute op at 1/(1 + slowdown) of its isolated speed (docs/OVERLAP.md).
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "stepsim/cost/collective/collective_algorithm.hpp"
#include "stepsim/workload/op.hpp"

namespace stepsim::cost {

// One communication op in flight on the GPU (an NCCL kernel: from the rank's launch to its end).
struct OverlapComm {
  workload::OpKind kind = workload::OpKind::Collective;  // Collective or P2P
  workload::CollType coll = workload::CollType::AllReduce;
  workload::GroupKind group = workload::GroupKind::Dp;
  uint64_t bytes = 0;  // message size S (nccl-tests convention); the "bucket size" of Echo Table 4
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  int channels = 0;  // 0 = unknown
};

// The compute kernel that is slowed. Metrics are Echo Table 4's computation features, in percent (0..100);
// NaN where unknown (the simulator derives SM and DRAM throughput from the roofline model and knows no cache
// statistics).
struct OverlapCompute {
  workload::ComputeCategory category = workload::ComputeCategory::Gemm;
  double isolated_us = 0;
  double sm_throughput_pct = NAN;
  double memory_throughput_pct = NAN;
  double dram_throughput_pct = NAN;
  double achieved_occupancy_pct = NAN;
  double l1_hit_rate_pct = NAN;
  double l2_hit_rate_pct = NAN;
  int comm_sms = 0;  // SMs the op already leaves to userbuffers communication (workload::Op::comm_sms)
};

class OverlapModel {
 public:
  virtual ~OverlapModel() = default;
  // Slowdown s >= 0 of `compute` while all of `comms` (non-empty) run beside it: it then needs (1 + s) times its
  // isolated time. Must be deterministic.
  virtual double compute_slowdown(const OverlapCompute& compute, std::span<const OverlapComm> comms) const = 0;
};

}  // namespace stepsim::cost
