#pragma once
// Megatron-Core's gradient buckets (DistributedDataParallel): one rule shared by the workload builder, which issues
// one reduction (and, under the distributed optimizer, one parameter all-gather) per bucket, and the planner's
// analytic estimate, which replays them.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::workload {

// Parameters per bucket: training.bucket_size, by default max(40M, 1M x DP) (Megatron-Core's DDP default, which grows
// with DP so that each rank's share stays large enough for NCCL's bandwidth); without overlap_grad_reduce one bucket
// per model chunk (no limit).
double dp_bucket_limit(const spec::TrainingSpec& t, int64_t dp);

// One gradient unit (a layer, the embedding, the output head) in the order its backward completes.
struct UnitParams {
  double dense = 0, expert = 0;
};
struct DpBucketSpan {
  bool expert = false;  // expert parameters reduce over the expert-data-parallel group
  double params = 0;
  size_t last = 0;      // index (backward order) of the unit whose backward completes the bucket
};

// Dense and expert parameters fill buckets of their own (they reduce over different groups), in backward order. A
// bucket closes as soon as it holds `limit` parameters; what is left closes after the last unit, dense first.
std::vector<DpBucketSpan> form_dp_buckets(const std::vector<UnitParams>& units, double limit);

}  // namespace stepsim::workload
