#include "stepsim/plan/estimate/ep_pairs.hpp"

#include "stepsim/workload/schedule.hpp"

namespace stepsim::plan::estimate {

void pair_layer(const LayerCosts& lc, int l, double share, LayerCosts::Part& f, LayerCosts::Part& b) {
  f.ep_s = (1 - share) * f.ep_s + share * lc.paired_ep_s[l];
  f.tp_s = (1 - share) * f.tp_s + share * lc.paired_tp_s[l];
  f.cp_s = (1 - share) * f.cp_s + share * lc.paired_cp_s[l];
  f.host_s = (1 - share) * f.host_s + share * lc.paired_host_s[l];
  b.ep_s = (1 - share) * b.ep_s;
  b.tp_s = (1 - share) * b.tp_s;
  b.cp_s = (1 - share) * b.cp_s;
  b.host_s = (1 - share) * b.host_s;
}

namespace {

// The share of stage s's passes after its warm-up (the steady state's pairs).
double paired_share_of(const spec::JobSpec& job, int s) {
  const auto& par = job.parallelism;
  const int p = par.pipeline, v = par.virtual_stages;
  const int64_t m = job.num_microbatches();
  const int total = static_cast<int>(m) * v;
  const int warm = workload::warmup_steps(par.schedule, s, p, v, static_cast<int>(m), true,
                                        workload::all_forwards_first(job.training));
  return static_cast<double>(total - warm) / static_cast<double>(total);
}

// Moves the stage's sums from layer l's unpaired exposure to its paired average.
void pair_stage_layer(const LayerCosts& lc, int l, double share, StageCosts& x) {
  LayerCosts::Part f = lc.fwd[l], b = lc.bwd[l];
  pair_layer(lc, l, share, f, b);
  x.f.ep_s += f.ep_s - lc.fwd[l].ep_s, x.f.tp_s += f.tp_s - lc.fwd[l].tp_s, x.f.cp_s += f.cp_s - lc.fwd[l].cp_s;
  x.b.ep_s += b.ep_s - lc.bwd[l].ep_s, x.b.tp_s += b.tp_s - lc.bwd[l].tp_s, x.b.cp_s += b.cp_s - lc.bwd[l].cp_s;
  x.f.host_s += f.host_s - lc.fwd[l].host_s, x.b.host_s += b.host_s - lc.bwd[l].host_s;
}

}  // namespace

std::vector<double> apply_combined_pairs(const spec::JobSpec& job, const LayerCosts& lc, const ChunkLayers& chunks,
                                         std::vector<StageCosts>& st) {
  std::vector<double> share(chunks.stages, 0.0);
  for (int s = 0; s < chunks.stages; ++s) {
    share[s] = paired_share_of(job, s);
    for (int k = 0; k < chunks.virtual_stages; ++k) {
      const int c = chunks.of(s, k);
      for (int l = chunks.first[c]; l < chunks.end(c); ++l) pair_stage_layer(lc, l, share[s], st[s]);
    }
  }
  return share;
}

}  // namespace stepsim::plan::estimate
