#include "stepsim/plan/estimate/step_tail.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/workload/megatron/features.hpp"
#include "stepsim/workload/optimizer_offload.hpp"

namespace stepsim::plan::estimate {

double memop_seconds(const cost::ComputeModel& compute, workload::ComputeCategory c, double bytes) {
  if (bytes <= 0) return 0.0;
  workload::Op op;
  op.category = c;
  op.bytes = static_cast<uint64_t>(bytes);
  return static_cast<double>(compute.duration_ns(op)) * 1e-9;
}

namespace {

// Parameters in the rank's optimizer shard: the distributed optimizer shards dense parameters over the data-parallel
// group and expert ones over the expert-data-parallel group.
double optimizer_params(const DpStep& step, const StageCosts& x) {
  return step.dist() ? x.dense / static_cast<double>(step.coll.dp_shards()) +
                           x.expert / static_cast<double>(step.coll.edp_shards())
                     : x.dense + x.expert;
}

}  // namespace

void add_fsdp2_copy_out(const DpStep& step, const cost::ComputeModel& compute, std::vector<StageCosts>& st) {
  if (step.job.training.zero_stage != 3 || !step.coll.any()) return;
  // Whether the builder copies out (workload/megatron/features.cpp decides it per framework).
  const auto f = workload::megatron::Features::resolve(step.job, step.job.parallelism.sequence_parallel, 2);
  if (!f.fsdp2_copy_out) return;
  for (int s = 0; s < step.chunks.stages; ++s) {
    int units = 0;
    for (int v = 0; v < step.chunks.virtual_stages; ++v) {
      const int c = step.chunks.of(s, v);
      units += step.chunks.len[c] + step.chunks.has_embedding(c) + step.chunks.has_head(c);
    }
    if (units == 0) continue;
    const double bytes = 2.0 * static_cast<double>(f.weight_bytes) * (st[s].dense + st[s].expert) / units;
    const double pass = units * memop_seconds(compute, workload::ComputeCategory::Elementwise, bytes);
    st[s].f.compute_s += pass;
    st[s].b.compute_s += pass;
  }
}

// The GPU's Adam, and under CPU offload the copies down, the CPU's Adam and the copies up (in series, or pipelined in
// kOffloadChunks with the first copy down and the last copy up exposed), the GPU's share running beside the first
// copy down.
double optimizer_seconds(const spec::TrainingSpec& tr, const workload::BytesPerParam& bpp, double params,
                         const cost::ComputeModel& compute) {
  using workload::ComputeCategory;
  const double host = tr.optimizer_offload ? std::round(params * tr.optimizer_offload_fraction) : 0.0;
  const double gpu = memop_seconds(compute, ComputeCategory::Optimizer, (params - host) * bpp.step_traffic);
  if (host <= 0) return gpu;
  const int chunks = tr.optimizer_offload_overlap ? workload::kOffloadChunks : 1;
  const double copy =
      memop_seconds(compute, ComputeCategory::Offload, host / chunks * workload::kOffloadCopyBytesPerParam);
  const double cpu =
      memop_seconds(compute, ComputeCategory::CpuOptimizer, host * workload::kCpuAdamBytesPerParam);
  return std::max(gpu, copy) + cpu + copy;
}

StepTail step_tail(const DpStep& step, const std::vector<StageCosts>& st, const cost::ComputeModel& compute) {
  const spec::TrainingSpec& tr = step.job.training;
  const double m = static_cast<double>(step.job.num_microbatches());
  const bool host_syncs = step.lc.host_syncs;
  StepTail out;
  for (int s = 0; s < static_cast<int>(st.size()); ++s) {
    const StageCosts& x = st[s];
    const StageDp dp = stage_dp(step, x, s);
    out.head_s = std::max(out.head_s, dp.head_s);
    const double opt_s = optimizer_seconds(tr, step.bpp, optimizer_params(step, x), compute);
    const double ag_tail = step.dist() && !tr.overlap_param_gather ? dp.gather_s : 0;
    const double end = dp.exposed_s + opt_s + ag_tail;
    if (!host_syncs) out.host_bound_s = std::max(out.host_bound_s, (x.f.issue_s + x.b.issue_s) * m + end);
    // With host syncs the replay's passes carry the probe's per-layer host waits, not the stage's chained ones, so
    // its passes' end is no bound; its stream's start plus the stream's work is (a stream busy to the step's end).
    if (x.zero.end_s > 0 && !host_syncs) out.zero_bound_s = std::max(out.zero_bound_s, x.zero.end_s + end);
    if (x.zero.stream_s > 0 && host_syncs)
      out.zero_bound_s = std::max(out.zero_bound_s, x.zero.stream_s + opt_s + ag_tail);
    if (end > out.tail_s) {
      out.tail_s = end;
      out.dp_exposed_s = dp.exposed_s + ag_tail;
      out.update_s = opt_s;
    }
  }
  return out;
}

}  // namespace stepsim::plan::estimate
