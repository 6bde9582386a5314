#pragma once
// TracedRank: one rank's step as a trace recorded it, in the form trace-driven simulation replays — ops in issue
// order with measured compute durations, communication with its true group and size, and the dependencies
// between streams (given by the file, or inferred from measured times). Read from a workload directory
// (docs/TRACE-SIMULATION.md): `rank<r>.json` (stepsim trace import / extrapolate) or `rank<r>.workload.json`
// (the ex-situ tracer, python/stepsim/trace).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/workload/op.hpp"

namespace stepsim::trace {

struct TracedTransfer {
  int peer = 0;  // global rank
  uint64_t bytes = 0;
};

struct TracedOp {
  workload::OpKind kind = workload::OpKind::Compute;
  std::string name;
  workload::ComputeCategory category = workload::ComputeCategory::Elementwise;
  workload::Phase phase = workload::Phase::Forward;
  int64_t duration_ns = 0;  // compute: measured (or extrapolated); communication: as measured, for reference only
  double flops = 0;
  uint64_t hbm_bytes = 0;
  // Collective:
  workload::CollType coll = workload::CollType::AllReduce;
  uint64_t bytes = 0;                // message size S (nccl-tests convention)
  bool measured_time = false;        // the trace gives no size: the collective replays its measured duration_ns
  std::vector<int> group_ranks;      // sorted global ranks; empty: the whole world, or (group_size below the world)
  int group_size = -1;               // the job layout's group `group`; -1 = not given
  std::optional<workload::GroupKind> group;  // as the file names it; else classified from group_ranks
  // P2P: one batch of transfers that complete together.
  std::vector<TracedTransfer> sends, recvs;
  // Dependencies: indices of earlier ops (any stream) this op waits for.
  std::vector<int> after;
  int64_t mem_alloc_bytes = 0, mem_free_bytes = 0;
  // Measured placement, used to infer dependencies and host gaps when the file gives none; -1 = unknown.
  int64_t start_ns = -1;
  bool blocking = true;  // communication: later compute waits for it (sync collective, send/recv)
};

struct TracedRank {
  int rank = 0;
  int world_size = -1;            // -1 = the file does not say
  std::string path;               // for messages
  std::vector<TracedOp> ops;      // issue order
  bool explicit_deps = false;     // `after` given by the file: no inference
  int64_t static_memory_bytes = 0;
  std::optional<double> measured_step_s;
  bool comm_only = false;         // an ex-situ trace without profiled ops (--no-profile): no program
  // A send completes on its own, its data waiting at the receiver (Chakra traces, as ASTRA-sim runs them), instead of
  // when the matching receive takes it (NCCL's rendezvous, the other traces).
  bool eager_sends = false;
};

}  // namespace stepsim::trace
