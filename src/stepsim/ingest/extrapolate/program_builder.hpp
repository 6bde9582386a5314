#pragma once
// One rank's extrapolated program: the resized kernels of its pipeline stage for every micro-batch in GPipe or
// 1F1B order (Megatron-LM's non-interleaved schedules, with its batched send/recv pairs), the tensor-parallel
// collectives after the layers that need them, DDP's bucket all-reduces in the last micro-batch's backward pass
// and the optimizer tail after them. Dependencies are explicit (`after`), as the workload format allows.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/ingest/extrapolate/ddp_buckets.hpp"
#include "stepsim/ingest/extrapolate/source_step.hpp"
#include "stepsim/ingest/extrapolate/tensor_parallel.hpp"
#include "stepsim/ingest/trace/traced_rank.hpp"
#include "stepsim/workload/op.hpp"
#include "stepsim/workload/rank_layout.hpp"

namespace stepsim::extrapolate {

struct StepPlan {
  const SourceStep* src = nullptr;
  std::vector<int64_t> duration_ns;              // per source op, resized
  std::vector<TpCollective> tp;                  // sorted by after_op
  std::vector<std::vector<Bucket>> buckets;      // per stage
  std::vector<int> stage_of_op;                  // per source op; -1 = the tail, run by every stage
  std::vector<uint64_t> boundary_bytes;          // activation sent from stage s to s + 1 (and its gradient back)
  int micro_batches = 1;
  bool one_f_one_b = true;
  bool dp_after_backward = false;                // all buckets after the backward pass instead of overlapped
  bool host_gaps = true;                         // replay the trace's CPU-bound idle time per micro-batch and stage
  workload::RankLayout layout;
};

// Ops in the trace-driven format (trace::TracedOp), dependencies as `after`.
std::vector<trace::TracedOp> build_program(const StepPlan& plan, int tp_rank, int stage);

}  // namespace stepsim::extrapolate
