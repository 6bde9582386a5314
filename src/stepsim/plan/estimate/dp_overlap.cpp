#include "stepsim/plan/estimate/dp_overlap.hpp"

#include <algorithm>
#include <limits>

#include "stepsim/workload/dp_buckets.hpp"

namespace stepsim::plan::estimate {

double exposed_grad_reduce(const std::vector<BucketUnit>& units, const std::vector<DpBucket>& buckets, double stream,
                           double slowdown) {
  double t = 0, work = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    t += beside_stream(units[u].bwd_s, stream - t, slowdown);
    work += units[u].bwd_s;
    for (const DpBucket& b : buckets) {
      if (b.close == u) stream = std::max(stream, t) + b.reduce_s;
    }
  }
  return std::max(0.0, std::max(stream, t) - work);
}

double exposed_param_gather(const std::vector<BucketUnit>& units, const std::vector<DpBucket>& buckets,
                            double slowdown) {
  // Gathers in forward order: buckets close in backward order, so the last one formed is gathered first.
  std::vector<double> ready(units.size(), 0.0);
  double stream = 0;
  for (size_t i = buckets.size(); i-- > 0;) {
    stream += buckets[i].gather_s;
    // A bucket holds backward-order units first..close: in forward order `close` comes first.
    ready[buckets[i].close] = std::max(ready[buckets[i].close], stream);
  }
  double t = 0, work = 0;
  for (size_t u = units.size(); u-- > 0;) {  // forward order: the stream gathers from 0 until `stream`
    t = std::max(t, ready[u]);
    t += beside_stream(units[u].fwd_s, stream - t, slowdown);
    work += units[u].fwd_s;
  }
  return std::max(0.0, t - work);
}

namespace {

// Stage 0's first model chunk unit by unit, in backward order.
std::vector<BucketUnit> first_chunk_units(const DpStep& step) {
  const LayerCosts& lc = step.lc;
  const ChunkLayers& ch = step.chunks;
  std::vector<BucketUnit> u;
  if (ch.count() == 1) u.push_back({pass_wall(lc, lc.last_fwd), pass_wall(lc, lc.last_bwd), head_params(step.dims), 0});
  for (int l = ch.end(0) - 1; l >= ch.first[0]; --l) {
    const ParamSplit w = layer_params(step.job, step.dims, l);
    u.push_back({pass_wall(lc, lc.fwd[l]), pass_wall(lc, lc.bwd[l]), w.dense, w.expert});
  }
  const double embedding = static_cast<double>(step.dims.params_embedding);
  u.push_back({pass_wall(lc, lc.first_fwd), pass_wall(lc, lc.first_bwd), embedding, 0});
  return u;
}

std::vector<DpBucket> plan_dp_buckets(const DpStep& step, const std::vector<BucketUnit>& units) {
  const double limit = workload::dp_bucket_limit(step.job.training, step.coll.dp_shards());
  std::vector<workload::UnitParams> params;
  params.reserve(units.size());
  for (const BucketUnit& u : units) params.push_back({u.dense, u.expert});
  std::vector<DpBucket> out;
  for (const workload::DpBucketSpan& b : workload::form_dp_buckets(params, limit)) {
    out.push_back({step.reduce_s(b.expert, b.params), step.dist() ? step.gather_s(b.expert, b.params) : 0.0, b.last});
  }
  return out;
}

// Interleaved with overlap_grad_reduce: each model chunk but stage 0's first reduces its gradients as one bucket once
// its last backward has run, and the cool-down runs the chunks' last p backwards one chunk after another (local
// chunk v - 1 first), so chunk k's bucket can start k p chunk-backwards before the stage's last backward ends. Returns
// when the stream is through chunks v - 1 .. `last` on that clock (0 = the last backward's end).
double chunk_bucket_stream(const DpStep& step, const StageCosts& x, int s, int last) {
  const ChunkLayers& ch = step.chunks;
  const int p = ch.stages, v = ch.virtual_stages;
  const double b_chunk = pass_wall(step.lc, x.b) / v;
  double stream = -std::numeric_limits<double>::infinity();
  for (int k = v - 1; k >= last; --k) {
    const int c = ch.of(s, k);
    double dense = 0, expert = 0;
    for (int l = ch.first[c]; l < ch.end(c); ++l) {
      const bool moe = step.job.model.is_moe_layer(l);
      dense += static_cast<double>(step.dims.layer_params_dense(moe));
      if (moe) expert += static_cast<double>(step.dims.params_moe_experts);
    }
    if (ch.has_head(c)) dense += head_params(step.dims);
    stream = std::max(stream, -static_cast<double>(k) * p * b_chunk) + step.reduce_s(false, dense) +
             step.reduce_s(true, expert);
  }
  return stream;
}

}  // namespace

StageDp stage_dp(const DpStep& step, const StageCosts& x, int s) {
  const spec::TrainingSpec& tr = step.job.training;
  const int zero = tr.zero_stage, v = step.chunks.virtual_stages;
  const bool dist = step.dist();
  // Gradients reduced and parameters gathered once per step; under ZeRO-2/3 the gradients were reduce-scattered
  // during every backward (zero_replay), stage 2 still gathers the updated parameters at the end of the step and
  // stage 3 gathers them per layer in the next step.
  const double t_rs = zero >= 2 ? 0.0 : step.reduce_s(false, x.dense) + step.reduce_s(true, x.expert);
  StageDp out;
  out.gather_s = zero == 3 || (zero < 2 && !dist) ? 0.0 : step.gather_s(false, x.dense) + step.gather_s(true, x.expert);
  const bool overlap_reduce = tr.overlap_grad_reduce && zero < 2;
  const bool chunk_buckets = overlap_reduce && v > 1 && step.coll.any();
  // Only what the stream still has to do after the last backward is exposed; later stages finish their backwards
  // earlier than stage 0.
  const double exposed_rs = zero >= 2 ? x.zero.trailing_s
                             : chunk_buckets && s > 0 ? std::max(0.0, chunk_bucket_stream(step, x, s, 0))
                                                      : t_rs;
  out.exposed_s = std::max(0.0, exposed_rs - static_cast<double>(s) * pass_wall(step.lc, x.b) / v);
  const bool overlap_gather = dist && tr.overlap_param_gather && zero < 3;
  if (s == 0 && (overlap_reduce || overlap_gather) && step.coll.any()) {
    // Stage 0's first chunk bucket by bucket; its other chunks go first on the same stream (their reductions left
    // when chunk 0's last backward starts, one chunk-backward before the end).
    const std::vector<BucketUnit> units = first_chunk_units(step);
    const std::vector<DpBucket> buckets = plan_dp_buckets(step, units);
    const double backlog = chunk_buckets ? chunk_bucket_stream(step, x, s, 1) + pass_wall(step.lc, x.b) / v : 0.0;
    if (overlap_reduce) out.exposed_s = exposed_grad_reduce(units, buckets, std::max(0.0, backlog), step.slowdown);
    if (overlap_gather) out.head_s = exposed_param_gather(units, buckets, step.slowdown);
  }
  if (dist && tr.overlap_param_gather && s > 0) out.head_s = out.gather_s - pass_wall(step.lc, x.f);
  return out;
}

}  // namespace stepsim::plan::estimate
