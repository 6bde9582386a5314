#pragma once
// Pipeline schedules: the order in which one pipeline stage runs forward and backward steps of
// (micro-batch, model chunk), exactly as Megatron-LM's schedules.py orders them.
#include <vector>

#include "stepsim/spec/job_spec.hpp"

namespace stepsim::workload {

struct PipelineStep {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;  // model chunk on this stage (0 .. virtual_stages-1)
};

// Steps of `stage` for `num_microbatches` micro-batches on `stages` stages with `chunks` chunks per stage.
std::vector<PipelineStep> pipeline_steps(spec::PipelineSchedule schedule, int stage, int stages, int chunks,
                                         int num_microbatches);

// Warm-up forward steps of a stage (before its first backward) in Megatron's 1F1B / interleaved 1F1B.
int warmup_steps(spec::PipelineSchedule schedule, int stage, int stages, int chunks, int num_microbatches);

}  // namespace stepsim::workload
