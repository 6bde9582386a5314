#include "stepsim/plan/estimate/stage_costs.hpp"

#include <algorithm>

namespace stepsim::plan::estimate {

ParamSplit layer_params(const spec::JobSpec& job, const workload::ModelDims& d, int layer) {
  const bool moe = job.model.is_moe_layer(layer);
  return {static_cast<double>(d.layer_params_dense(moe)), moe ? static_cast<double>(d.params_moe_experts) : 0.0};
}

double head_params(const workload::ModelDims& d) { return static_cast<double>(d.params_output + d.params_final_norm); }

void add_part(LayerCosts::Part& a, const LayerCosts::Part& b) {
  a.compute_s += b.compute_s;
  a.tp_s += b.tp_s;
  a.cp_s += b.cp_s;
  a.ep_s += b.ep_s;
  a.host_s += b.host_s;
  a.issue_s += b.issue_s;
}

namespace {

void add_layer(StageCosts& x, const LayerCosts& lc, int l) {
  add_part(x.f, lc.fwd[l]);
  add_part(x.b, lc.bwd[l]);
  x.stored += lc.stored_bytes[l];
}

}  // namespace

std::vector<StageParams> stage_params(const spec::JobSpec& job, const workload::ModelDims& d, const ChunkLayers& chunks) {
  const int p = chunks.stages;
  std::vector<StageParams> st(p);
  for (int s = 0; s < p; ++s) {
    StageParams& x = st[s];
    for (int k = 0; k < chunks.virtual_stages; ++k) {
      const int c = chunks.of(s, k);
      for (int l = chunks.first[c]; l < chunks.end(c); ++l) {
        const ParamSplit w = layer_params(job, d, l);
        x.dense += w.dense;
        x.expert += w.expert;
        if (job.training.layer_in_bf16(l, job.model.num_layers)) {
          x.bf16 += static_cast<double>(d.layer_params(job.model.is_moe_layer(l)));
        }
      }
    }
    if (s == 0) x.dense += static_cast<double>(d.params_embedding);
    if (s == p - 1) x.dense += head_params(d);
  }
  return st;
}

std::vector<StageCosts> stage_costs(const spec::JobSpec& job, const LayerCosts& lc, const workload::ModelDims& d,
                                    const ChunkLayers& chunks) {
  const int p = chunks.stages;
  const std::vector<StageParams> params = stage_params(job, d, chunks);
  std::vector<StageCosts> st(p);
  for (int s = 0; s < p; ++s) {
    StageCosts& x = st[s];
    x.dense = params[s].dense;
    x.expert = params[s].expert;
    x.bf16 = params[s].bf16;
    for (int k = 0; k < chunks.virtual_stages; ++k) {
      const int c = chunks.of(s, k);
      for (int l = chunks.first[c]; l < chunks.end(c); ++l) add_layer(x, lc, l);
    }
    if (s == 0) {
      add_part(x.f, lc.first_fwd);
      add_part(x.b, lc.first_bwd);
      x.stored += lc.first_stored;
    }
    if (s == p - 1) {
      add_part(x.f, lc.last_fwd);
      add_part(x.b, lc.last_bwd);
      x.stored += lc.last_stored;
    }
  }
  return st;
}

double pass_wall(const LayerCosts& lc, const LayerCosts::Part& x) {
  return lc.host_syncs ? x.total() : std::max(x.total(), x.issue_s);
}

}  // namespace stepsim::plan::estimate
