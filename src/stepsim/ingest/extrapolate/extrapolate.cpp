#include "stepsim/ingest/extrapolate/extrapolate.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/ingest/extrapolate/op_resize.hpp"
#include "stepsim/ingest/extrapolate/pipeline_stages.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::extrapolate {

using workload::Phase;

Extrapolation extrapolate(const spec::JobSpec& job, const Options& opt) {
  const auto& par = job.parallelism;
  if (par.context != 1) throw InputError("parallelism.context: extrapolation splits data, tensor and pipeline only; set it to 1");
  if (par.virtual_stages != 1) throw InputError("parallelism.virtual_stages: extrapolation builds GPipe or 1F1B; set it to 1");
  if (!(opt.bucket_mb > 0) || opt.bucket_mb > 1e6) throw InputError("--bucket-mb: must be a positive number of MiB");
  if (opt.trace_batch < 0) throw InputError("--trace-batch: must be positive");
  bool one_f_one_b = par.schedule != spec::PipelineSchedule::GPipe;
  if (opt.schedule) {
    if (*opt.schedule != "gpipe" && *opt.schedule != "1f1b") throw InputError("--schedule: must be gpipe or 1f1b");
    one_f_one_b = *opt.schedule == "1f1b";
  } else if (par.schedule == spec::PipelineSchedule::Interleaved1F1B) {
    throw InputError("parallelism.schedule: interleaved-1f1b is not extrapolated; give --schedule gpipe or 1f1b");
  }
  Extrapolation x;
  x.source = load_source_step(opt.trace, opt.et);
  const SourceStep& s = x.source;
  const int t = par.tensor, p = par.pipeline, d = par.data;
  const int64_t mbs = job.training.micro_batch_size;
  const int64_t gbs = job.training.global_batch_size;
  if (gbs % (mbs * d) != 0)
    throw InputError("training.global_batch_size: " + std::to_string(gbs) + " is not a multiple of micro_batch_size x data (" +
                     std::to_string(mbs * d) + ")");
  const int m = static_cast<int>(gbs / (mbs * d));
  if (t > 1 && s.layers.size() == 1 && s.layers[0].node < 0)
    throw InputError((opt.et.empty() ? opt.trace : opt.et) + ": parallelism.tensor " + std::to_string(t) +
                     " needs the layers' shapes: give the run's execution trace with --et");

  Resize batch;
  if (opt.trace_batch > 0) {
    batch.trace_batch = opt.trace_batch;
    batch.batch_ratio = static_cast<double>(mbs) / static_cast<double>(opt.trace_batch);
  }
  x.batch_ratio = batch.batch_ratio;
  x.regression = OpRegression::fit(samples_of(s));
  x.tp = plan_tensor_parallel(s, t, batch);
  const Resized rz = resize_ops(s, x.regression, batch, t, x.tp.split_layers);
  x.rescaled = rz.rescaled;
  x.kept = rz.kept;

  StepPlan& plan = x.plan;
  plan.src = &x.source;
  plan.duration_ns = rz.duration_ns;
  plan.tp = x.tp.collectives;
  plan.micro_batches = m;
  plan.one_f_one_b = one_f_one_b;
  plan.dp_after_backward = opt.dp_overlap == DpOverlap::After;
  plan.layout = workload::RankLayout(t, 1, d, p, 1, std::min(job.cluster.gpus_per_node, job.cluster.num_gpus));

  // Stages: layer ranges; each forward/backward kernel goes with its layer, the tail runs on every stage.
  const int layers = static_cast<int>(s.layers.size());
  std::vector<int64_t> layer_ns(static_cast<size_t>(layers), 0);
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (s.ops[i].layer >= 0) layer_ns[static_cast<size_t>(s.ops[i].layer)] += plan.duration_ns[i];
  }
  x.stages = opt.stages.empty() ? balance_stages(layer_ns, p) : parse_stages(opt.stages, p, layers);
  std::vector<int> stage_of_layer(static_cast<size_t>(layers), 0);
  for (int st = 0; st < p; ++st) {
    for (int l = x.stages[st].first; l <= x.stages[st].second; ++l) stage_of_layer[static_cast<size_t>(l)] = st;
  }
  x.stage_forward_ns.assign(static_cast<size_t>(p), 0);
  x.stage_backward_ns.assign(static_cast<size_t>(p), 0);
  plan.boundary_bytes.assign(static_cast<size_t>(std::max(0, p - 1)), 0);
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const SourceOp& op = s.ops[i];
    const int st = op.phase == Phase::Optimizer || op.layer < 0 ? -1 : stage_of_layer[static_cast<size_t>(op.layer)];
    plan.stage_of_op.push_back(st);
    if (st < 0) continue;
    (op.phase == Phase::Backward ? x.stage_backward_ns : x.stage_forward_ns)[static_cast<size_t>(st)] += plan.duration_ns[i];
    // The activation a stage hands on: the output of its last forward op that records one.
    if (op.phase == Phase::Forward && st + 1 < p && op.node >= 0) {
      const double b = first_tensor_bytes(s.et.nodes[static_cast<size_t>(op.node)], false, batch);
      if (b > 0) plan.boundary_bytes[static_cast<size_t>(st)] = static_cast<uint64_t>(std::llround(b));
    }
  }
  // DDP buckets per stage, from the gradients of its layers (a split layer's gradient is 1/t).
  const uint64_t cap = static_cast<uint64_t>(std::llround(opt.bucket_mb * 1024 * 1024));
  std::vector<std::vector<Gradient>> grads(static_cast<size_t>(p));
  for (const Gradient& g : s.gradients) {
    const SourceOp& op = s.ops[static_cast<size_t>(g.ready_op)];
    const int st = op.layer >= 0 ? stage_of_layer[static_cast<size_t>(op.layer)] : p - 1;
    Gradient h = g;
    if (t > 1 && x.tp.split_layers.count(op.layer_node)) h.bytes = std::max<int64_t>(1, g.bytes / t);
    grads[static_cast<size_t>(st)].push_back(h);
  }
  for (int st = 0; st < p; ++st) plan.buckets.push_back(ddp_buckets(grads[st], cap, s.gradients_are_buckets));
  if (d > 1 && s.gradients.empty())
    throw InputError(opt.trace + ": parallelism.data " + std::to_string(d) +
                     " needs the gradients: give the execution trace (--et, its AccumulateGrad nodes) or a trace with all-reduces");

  for (int st = 0; st < p; ++st) {
    for (int tr = 0; tr < t; ++tr) {
      x.roles.push_back(plan.layout.rank_of({tr, 0, 0, st}));
      x.programs.push_back(build_program(plan, tr, st));
    }
  }
  plan.src = nullptr;  // x is moved out: its plan must not point into itself
  return x;
}

}  // namespace stepsim::extrapolate
