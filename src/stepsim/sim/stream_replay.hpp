#pragma once
// One rank's streams replayed in issue order, without the event engine: the planner's probe times a Megatron
// program this way (plan/estimate/probe.cpp). Every rank of such a program runs the same ops, so a collective starts
// when this rank's inputs are ready; the time a stream stands idle before an op, and what it waited for, tell which
// communication was exposed and which ran beside compute.
//
// It mirrors these rules of the engine (engine.hpp, engine.cpp try_start / host_issued / host_synced):
//   - each stream is a FIFO: an op starts no earlier than the end of the op before it on its stream;
//   - an op starts no earlier than its waits are met: Wait{stream, count} is met once the count-th op of that stream
//     has ended (the engine compares its done counter with count; with FIFO streams that is the same op's end);
//   - under the host issue model (Program::host_prefix non-empty) the host issues ops in program order, each op
//     starting no earlier than it is issued, and after a sync op (Op::host_sync) the host goes on once that op ended;
//   - a compute op lasts its duration_ns, a collective its model's time for the group's geometry, and a send/recv
//     nothing (the probe has one pipeline stage);
//   - with an overlap model, a compute-stream kernel runs at 1/(1 + s) of its speed while collectives run beside it,
//     s the model's slowdown for the set in flight (engine.cpp overlap_changed). Only collectives issued before the
//     kernel in program order are known when it is timed: Megatron issues its asynchronous collectives (gradient
//     buckets, parameter gathers, sequence-parallel gathers, the ring's exchanges) before the compute they overlap.
// It does not share code with the engine on purpose: the engine is event-driven over integer nanoseconds and every
// rank, this is one pass in program order over double seconds (the host's time summed op by op, not from the
// integer prefix sums), and the planner's estimates are defined by those doubles. Sharing the engine's start rule
// would change either the engine's hot path or the planner's numbers.
#include <vector>

#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/cost/overlap/overlap_model.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::sim {

struct StreamReplay {
  // Per op of the program: when it started and ended, and when its stream became free for it.
  std::vector<double> start_s, end_s, prev_free_s;
  // The op whose end decided its start; kStreamBlocker: its stream (or nothing); kHostBlocker: the host's issue.
  std::vector<int> blocker;
};
constexpr int kStreamBlocker = -1;
constexpr int kHostBlocker = -2;  // the host issued the op after its stream and inputs were ready

// The overlap model the replay slows compute with (none: kernels keep their isolated time), and the GPU's peaks its
// descriptions of a kernel need.
struct ReplayOverlap {
  const cost::OverlapModel* model = nullptr;
  double peak_flops = 0, hbm_Bps = 0;
};

// Replays programs[0] of `w`; with `host`, under the host issue model when the program carries it.
StreamReplay replay_streams(const workload::Workload& w, const cost::CollectiveModel& comm, bool host,
                            const ReplayOverlap& overlap = {});

}  // namespace stepsim::sim
