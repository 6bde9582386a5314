#pragma once
// Trace-driven workload: the traced ranks' steps as engine programs for a job's cluster. Compute ops keep their
// measured durations; collectives and send/recv keep their true communicators and sizes and are timed by the
// job's communication model; ranks that were not traced reuse the program of a traced data-parallel peer (same
// pipeline stage, tensor and context rank), with its communicators shifted to their own. docs/TRACE-SIMULATION.md.
#include <vector>

#include "stepsim/job/job_spec.hpp"
#include "stepsim/ingest/trace/traced_rank.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::trace {

struct TraceWorkloadOptions {
  bool host_gaps = true;  // keep the measured CPU-bound gaps between kernels (Host ops); false: the GPU never waits
};

struct TraceWorkload {
  workload::Workload workload;
  std::vector<int> source_of_rank;  // the traced rank whose program each rank runs
  int traced = 0;                   // ranks with their own trace
  int64_t host_gap_ops = 0;         // Host ops inserted or kept, all programs
  int64_t measured_comm_ops = 0;    // collectives without a message size, replaying their measured time
};

// InputError (naming the file and op) when a trace does not fit the job (world size, ranks beyond it, a rank
// missing with no data-parallel peer to reuse) or the ranks' communication does not match (a communicator's
// members issue different collectives, a send without its receive) — the cases that would deadlock.
TraceWorkload build_trace_workload(const spec::JobSpec& job, std::vector<TracedRank> ranks,
                                   const TraceWorkloadOptions& opt = {});

}  // namespace stepsim::trace
