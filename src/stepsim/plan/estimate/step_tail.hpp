#pragma once
// What follows a stage's last backward (its exposed gradient reduction, the optimizer step, the parameter all-gather
// unless it overlaps the next step's forwards), what precedes its first forward (overlapped parameter gathers), and
// the bounds a step cannot beat besides the GPU's pipeline: the host's issue time of the whole step where the host
// never waits for the GPU, and the ZeRO-2/3 data-parallel stream.
#include <vector>

#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/plan/estimate/dp_overlap.hpp"

namespace stepsim::plan::estimate {

// One memory-bound kernel of `bytes` in category c (0 for none).
double memop_seconds(const cost::ComputeModel& compute, workload::ComputeCategory c, double bytes);

// FSDP2 (framework torchtitan at ZeRO-3) copies each unit's gathered flat buffer out into its parameters on the compute
// stream before the unit's forward and its backward (grad_sync.cpp): 2 x weight bytes per parameter. The probe runs
// without ZeRO, so a stage-3 plan adds them to each stage's passes.
void add_fsdp2_copy_out(const DpStep& step, const cost::ComputeModel& compute, std::vector<StageCosts>& st);

// The optimizer step of one rank's shard of `params` parameters as the builder emits it.
double optimizer_seconds(const spec::TrainingSpec& tr, const workload::BytesPerParam& bpp, double params,
                         const cost::ComputeModel& compute);

struct StepTail {
  double tail_s = 0;        // the longest stage's tail: exposed reduction + optimizer + parameter all-gather
  double head_s = 0;        // the longest wait of a first forward for overlapped parameter gathers
  double dp_exposed_s = 0;  // that tail's data-parallel communication
  double update_s = 0;      // that tail's optimizer step
  double host_bound_s = 0;  // no host syncs: the longest stage's host issue of m micro-batches, then its tail
  double zero_bound_s = 0;  // ZeRO-2/3: the longest stage's data-parallel stream, then its tail
};
StepTail step_tail(const DpStep& step, const std::vector<StageCosts>& st, const cost::ComputeModel& compute);

}  // namespace stepsim::plan::estimate
