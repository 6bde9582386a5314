// build_megatron_workload: the job resolved once (dimensions, features), each pipeline stage's program built
// (stage_builder.hpp), then each program's memory: the activation peaks replayed in issue order and the static memory.
#include <algorithm>
#include <string>

#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron/stage_builder.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/static_memory.hpp"
#include "stepsim/workload/working_memory.hpp"

namespace stepsim::workload {

namespace {

// Replays the program's allocations in issue order: the peak of stored activations and working buffers on this rank,
// and the peak of the stored activations alone.
void replay_activation_peaks(Program& p) {
  int64_t cur = 0, peak = 0, stored = 0, stored_peak = 0;
  for (const Op& op : p.ops) {
    cur += op.mem_alloc_at_start;
    stored += op.mem_alloc_at_start - op.mem_transient;
    peak = std::max(peak, cur);
    stored_peak = std::max(stored_peak, stored);
    cur -= op.mem_free_at_end;
    stored -= op.mem_free_at_end - op.mem_transient;
  }
  p.activation_peak = peak;
  p.stored_activation_peak = stored_peak;
}

// Refuses before building: a stage runs every micro-batch through its layers (forward, backward, and recompute),
// about 40 ops per layer (60 for MoE) plus embedding, head and exchanges.
void check_op_estimate(const spec::JobSpec& job) {
  const auto& par = job.parallelism;
  const double layers_per_stage = static_cast<double>(job.model.num_layers) / par.pipeline + 2.0;
  const double estimate = estimated_ops_per_rank(job);
  if (estimate > static_cast<double>(kMaxOpsPerProgram)) {
    // Name the factor that is out of the ordinary: the layers a stage holds, or the micro-batches.
    const bool layers = layers_per_stage > static_cast<double>(job.num_microbatches());
    throw InputError(job.source + ": key " + (layers ? "model.num_layers" : "training.global_batch_size") +
                     ": about " + std::to_string(static_cast<int64_t>(estimate)) + " ops per rank (" +
                     std::to_string(job.num_microbatches()) + " micro-batches x " +
                     std::to_string(job.model.num_layers / par.pipeline) + " layers per stage), more than the limit of " +
                     std::to_string(kMaxOpsPerProgram) +
                     (layers ? "; split the layers over more pipeline stages or simulate fewer micro-batches"
                             : "; simulate fewer micro-batches"));
  }
}

}  // namespace

Workload build_megatron_workload(const spec::JobSpec& job) {
  const auto& par = job.parallelism;
  Workload w;
  w.job = job;
  w.layout = job_rank_layout(job);
  const ModelDims d = make_dims(job);
  check_op_estimate(job);
  const megatron::Features features = megatron::Features::resolve(job, d.sp, d.act_bytes);
  w.programs.resize(par.pipeline);
  w.role_of_stage.resize(par.pipeline);
  for (int s = 0; s < par.pipeline; ++s) {
    const megatron::StageShape shape = megatron::StageShape::of(job, s);
    const megatron::StageFacts facts{job, d, w.layout, features, shape};
    megatron::StageBuilder(facts, w.programs[s]).build();
    w.role_of_stage[s] = s;
  }
  const int64_t ranks_per_stage = int64_t{par.tensor} * par.context * par.data;
  const int communicators = w.layout.communicators();
  for (Program& p : w.programs) {
    replay_activation_peaks(p);
    const bool first = p.stage == 0, last = p.stage == par.pipeline - 1;
    const RankParams q{p.dense_parameters, p.expert_parameters,
                       d.fp8_exempt_params(first, last, p.bf16_layer_parameters),
                       d.root_params(first, last), d.largest_layer_params(job.model.moe.has_value()),
                       d.head_params(last)};
    p.static_memory = static_memory(job, q, w.layout.group_size(GroupKind::Dp), w.layout.group_size(GroupKind::Edp),
                                    communicators);
    p.static_memory.allocator_reserve = allocator_reserve_bytes(job, static_cast<double>(p.activation_peak));
    double fwd = 0;
    for (const Op& op : p.ops) {
      if (op.kind == OpKind::Compute && op.phase == Phase::Forward) fwd += op.flops;
    }
    // Model FLOPs: forward + backward = 3x forward, without recompute (the MFU convention).
    w.model_flops_per_step += 3.0 * fwd * static_cast<double>(ranks_per_stage);
  }
  return w;
}

}  // namespace stepsim::workload
