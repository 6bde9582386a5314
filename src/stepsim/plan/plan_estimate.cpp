#include "stepsim/plan/plan_estimate.hpp"

#include <algorithm>
#include <vector>

#include "stepsim/plan/estimate/dp_collectives.hpp"
#include "stepsim/plan/estimate/ep_pairs.hpp"
#include "stepsim/plan/estimate/host_flow_shop.hpp"
#include "stepsim/plan/estimate/pipeline.hpp"
#include "stepsim/plan/estimate/stage_costs.hpp"
#include "stepsim/plan/estimate/stage_memory.hpp"
#include "stepsim/plan/estimate/step_tail.hpp"
#include "stepsim/plan/estimate/zero_replay.hpp"
#include "stepsim/workload/model_dims.hpp"
#include "stepsim/workload/rank_layout.hpp"
#include "stepsim/workload/static_memory.hpp"

namespace stepsim::plan {

ProbeKey probe_key(const Plan& p) {
  return ProbeKey{p.tensor, p.context, p.expert, p.micro_batch_size, p.recompute, p.tp_comm_overlap, p.cp_comm_type,
                  p.expert_tensor, p.fp8_recipe, p.ep_overlap, p.cp_a2a};
}

namespace {

// The step is the longest of the GPU's (head, pipeline, sends, tail), the host's and the ZeRO stream's; the stage
// times are the slowest stage's (MoFa Table 6), with what the host and stream bounds add.
Estimate compose_estimate(const spec::JobSpec& job, const LayerCosts& lc, const estimate::StageCosts& x,
                          const estimate::PipelineTerms& pipe, const estimate::StepTail& tail,
                          const estimate::StageMemoryPeak& mem) {
  const double m = static_cast<double>(job.num_microbatches());
  const double gpu_bound = std::max(0.0, tail.head_s) + pipe.pipe_s + pipe.sends_s + tail.tail_s;
  Estimate e;
  e.step_time_s = std::max({gpu_bound, tail.host_bound_s, tail.zero_bound_s});
  e.peak_memory_bytes = mem.bytes;
  e.peak_stage = mem.stage;
  e.allocated_memory_bytes = mem.allocated_bytes;
  e.stages.compute_s = (x.f.compute_s + x.b.compute_s) * m;
  e.stages.tp_s = (x.f.tp_s + x.b.tp_s) * m;
  e.stages.cp_s = (x.f.cp_s + x.b.cp_s) * m;
  e.stages.ep_s = (x.f.ep_s + x.b.ep_s) * m;
  // Without host syncs the probe's host waits are the framework's own (DeepSpeed's hooks); the host bound adds the
  // rest.
  e.stages.host_s = (x.f.host_s + x.b.host_s) * m + (lc.host_syncs ? 0.0 : e.step_time_s - gpu_bound);
  e.stages.pp_s = pipe.bubble_s + pipe.sends_s;
  e.stages.dp_s = tail.dp_exposed_s + std::max(0.0, tail.head_s) + x.zero_wait * m;
  // (Without host syncs the host column takes what the bounds add; with them a stream-bound step is the stream's.)
  if (lc.host_syncs) e.stages.dp_s += e.step_time_s - gpu_bound;
  e.stages.update_s = tail.update_s;
  // Model FLOPs as the engine's summary counts them: 3 x forward, every rank of every stage, no recompute.
  const auto& par = job.parallelism;
  const double ranks_per_stage = static_cast<double>(par.tensor) * par.context * par.data;
  const double model_flops = 3.0 * lc.forward_flops * m * ranks_per_stage;
  e.tflops_per_gpu = model_flops / (static_cast<double>(job.cluster.num_gpus) * e.step_time_s) / 1e12;
  return e;
}

}  // namespace

Estimate estimate_plan(const spec::JobSpec& job, const LayerCosts& lc, const cost::ComputeModel& compute,
                       const cost::CollectiveModel& comm) {
  using namespace estimate;
  const workload::ModelDims d = workload::make_dims(job);
  // The builder's layout, expert tensor parallel size included (it sets the expert-DP group that shards the experts'
  // optimizer states and reduces their gradients).
  const workload::RankLayout layout = workload::job_rank_layout(job);
  const workload::BytesPerParam bpp = workload::bytes_per_param(job.training);
  const ChunkLayers chunks = chunk_layers(job);
  std::vector<StageCosts> st = stage_costs(job, lc, d, chunks);
  // With host syncs (MoE) the stage's chained sync-to-sync segments replace the probe's per-layer host waits; under
  // the combined 1F1B EP overlap the probe's costs are kept (its pairs, below).
  if (lc.host_syncs && lc.paired_ep_s.empty()) chain_host_syncs(lc, chunks, st);
  std::vector<double> paired_share(chunks.stages, 0.0);
  if (!lc.paired_ep_s.empty()) paired_share = apply_combined_pairs(job, lc, chunks, st);
  const DpCollectives coll(layout, comm);
  const DpStep dp{job, lc, d, chunks, coll, bpp, dp_compute_slowdown(job, coll, bpp, lc.overlap.get())};
  add_fsdp2_copy_out(dp, compute, st);
  if (job.training.zero_stage >= 2 && coll.any()) replay_zero_streams(dp, paired_share, st);
  const PipelineTerms pipe = pipeline_terms(st, chunks.virtual_stages, job.num_microbatches(), layout, comm,
                                            boundary_activation_bytes(bpp, d));
  const StepTail tail = step_tail(dp, st, compute);
  const StageMemoryPeak mem = peak_stage_memory(job, lc, d, layout, st);
  return compose_estimate(job, lc, st[pipe.slow], pipe, tail, mem);
}

}  // namespace stepsim::plan
