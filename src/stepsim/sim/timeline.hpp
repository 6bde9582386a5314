#pragma once
// What one simulation produces: step time, per-rank peaks, and the recorded timelines of the ranks
// asked for (op records, memory samples, send->recv flows). Times are integer nanoseconds.
#include <cstdint>
#include <vector>

namespace stepsim::sim {

struct OpRecord {
  uint32_t op = 0;        // index into the rank's Program::ops
  int64_t post_ns = 0;    // when the rank issued it (stream free and dependencies met)
  int64_t begin_ns = 0;   // when it began executing (collectives: the last member's arrival)
  int64_t end_ns = 0;
  double slowdown = 1.0;  // compute slow-down factor applied (stragglers)
  int64_t overlap_ns = 0; // compute: time added by communication kernels sharing the GPU (overlap model)
  // Host issue model: how long before post_ns the op was ready (stream free, dependencies met) but not yet issued by
  // the host; the breakdown counts that time as host time where nothing else runs.
  int64_t host_wait_ns = 0;
};

struct MemorySample {
  int64_t t_ns = 0;
  int64_t bytes = 0;  // allocated after the change at t_ns
};

struct RankTimeline {
  int rank = 0;
  std::vector<OpRecord> ops;
  std::vector<MemorySample> memory;
};

// A matched point-to-point transfer between two recorded ranks (for trace flow arrows).
struct Flow {
  int src_rank = 0, dst_rank = 0;
  int64_t begin_ns = 0, end_ns = 0;
  uint64_t bytes = 0;
  int src_stream = 0, dst_stream = 0;  // the pipeline stream (workload::Stream) of each side's exchange
};

struct SimResult {
  int64_t step_ns = 0;                 // last op end over all ranks
  std::vector<int64_t> finish_ns;      // per rank
  std::vector<int64_t> peak_bytes;     // per rank: static + peak of dynamic allocations
  std::vector<RankTimeline> recorded;  // ranks asked for, in the order asked
  std::vector<Flow> flows;
  uint64_t events = 0;                 // discrete events processed
  int simulated_ranks = 0;             // ranks the engine ran ...
  int mirrored_ranks = 0;              // ... and ranks that took a representative's results (rank_symmetry.hpp)
  double wall_s = 0;                   // host time the engine ran
};

}  // namespace stepsim::sim
