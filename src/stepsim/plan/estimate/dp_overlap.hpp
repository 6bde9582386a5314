#pragma once
// A stage's gradient reduction and parameter all-gather, once per step (plain data parallelism and ZeRO-1; ZeRO-2/3
// move them into the passes: zero_replay.hpp), and how much of them the passes hide. Under overlap_grad_reduce /
// overlap_param_gather stage 0's first model chunk is replayed unit by unit as the builder buckets it
// (workload/dp_buckets.hpp): units in backward order (the head when the chunk is the whole model, the layers last to
// first, the embedding), dense and expert parameters in separate buckets. A bucket's gradients are reduced when the
// unit closing it has finished its backward (last micro-batch); its parameters are all-gathered at the step's start,
// in forward order, and the first unit of it in forward order waits for them. One FIFO data-parallel stream carries
// both.
#include <vector>

#include "stepsim/plan/estimate/dp_collectives.hpp"
#include "stepsim/plan/estimate/stage_costs.hpp"

namespace stepsim::plan::estimate {

struct BucketUnit {
  double fwd_s = 0, bwd_s = 0, dense = 0, expert = 0;
};
struct DpBucket {
  double reduce_s = 0, gather_s = 0;
  size_t close = 0;  // backward-order index of the unit that completes it (its first unit in forward order)
};

// Seconds the chunk's last backward ends after its kernels' own time: the stream running on after it (overlapped
// gradient reduction) and the backward's kernels slowed beside the stream (`slowdown`, DpStep). `stream`: when the
// data-parallel stream is free, on the clock where 0 is the start of the chunk's last backward.
double exposed_grad_reduce(const std::vector<BucketUnit>& units, const std::vector<DpBucket>& buckets, double stream,
                           double slowdown = 0);
// Seconds the chunk's first forward waits for its parameters (overlapped parameter all-gather), and is slowed beside
// the gathers.
double exposed_param_gather(const std::vector<BucketUnit>& units, const std::vector<DpBucket>& buckets,
                            double slowdown = 0);

struct StageDp {
  double gather_s = 0;  // the stage's whole parameter all-gather (0 where there is none at the step's end)
  double exposed_s = 0;  // the gradient reduction still running after the stage's last backward
  double head_s = 0;     // the first forward's wait for overlapped parameter gathers (0: none)
};
StageDp stage_dp(const DpStep& step, const StageCosts& x, int stage);

}  // namespace stepsim::plan::estimate
