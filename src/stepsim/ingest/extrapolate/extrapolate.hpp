#pragma once
// `stepsim trace extrapolate`: one single-GPU step (Kineto trace + execution trace) to the programs of a job's
// data-, tensor- and pipeline-parallel ranks (TrioSim §4.3-4.4), written as a workload directory that
// `stepsim simulate JOB --workload DIR` replays. docs/EXTRAPOLATION.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/ingest/extrapolate/ddp_buckets.hpp"
#include "stepsim/ingest/extrapolate/op_regression.hpp"
#include "stepsim/ingest/extrapolate/program_builder.hpp"
#include "stepsim/ingest/extrapolate/source_step.hpp"
#include "stepsim/ingest/extrapolate/tensor_parallel.hpp"
#include "stepsim/job/job_spec.hpp"

namespace stepsim::extrapolate {

enum class DpOverlap { Backward, After };

struct Options {
  std::string trace, et;
  double bucket_mb = 25;                 // DDP bucket_cap_mb
  DpOverlap dp_overlap = DpOverlap::Backward;
  std::optional<std::string> schedule;   // gpipe | 1f1b; default: the job's parallelism.schedule
  std::string stages;                    // "0-3,4-7"; empty: balanced by time
  int64_t trace_batch = 0;               // per-GPU batch the trace ran; 0: the job's micro_batch_size
};

struct Extrapolation {
  SourceStep source;
  OpRegression regression;
  TpPlan tp;
  StepPlan plan;
  std::vector<std::pair<int, int>> stages;
  std::vector<int64_t> stage_forward_ns, stage_backward_ns;  // one micro-batch
  double batch_ratio = 1;
  int rescaled = 0, kept = 0;
  std::vector<int> roles;                       // ranks written (dp = 0, cp = 0: one per stage and tensor rank)
  std::vector<std::vector<trace::TracedOp>> programs;     // per role
};

// InputError (exit 2) naming the file or flag and the rule.
Extrapolation extrapolate(const spec::JobSpec& job, const Options& opt);

// DIR/rank<r>.json per role, DIR/summary.json, DIR/extrapolation.json.
void write_extrapolation(const Extrapolation& x, const spec::JobSpec& job, const Options& opt, const std::string& dir);
std::string report_text(const Extrapolation& x, const Options& opt, const std::string& dir);

}  // namespace stepsim::extrapolate
