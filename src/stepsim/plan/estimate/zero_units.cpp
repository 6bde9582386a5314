#include "stepsim/plan/estimate/zero_units.hpp"

#include <map>
#include <utility>

#include "stepsim/plan/estimate/ep_pairs.hpp"

namespace stepsim::plan::estimate {

namespace {

// A unit's collective: the dense parameters' plus the experts', each memoised (a 405B plan replays thousands of units
// of a few sizes).
class ZeroCollectives {
 public:
  explicit ZeroCollectives(const DpCollectives& coll) : coll_(coll) {}
  double seconds(workload::CollType c, double dense, double expert, double bytes_per_param) {
    double t = 0;
    const double params[2] = {dense, expert};
    for (int k = 0; k < 2; ++k) {
      const uint64_t bytes = static_cast<uint64_t>(params[k] * bytes_per_param);
      auto [it, fresh] = memo_.try_emplace({static_cast<int>(c) * 2 + k, bytes}, 0.0);
      if (fresh) it->second = coll_.seconds(c, k == 1, params[k] * bytes_per_param);
      t += it->second;
    }
    return t;
  }

 private:
  const DpCollectives& coll_;
  std::map<std::pair<int, uint64_t>, double> memo_;  // (collective and group, bytes) -> seconds
};

class StageUnitsBuilder {
 public:
  StageUnitsBuilder(const DpStep& step, ZeroCollectives& coll) : step_(step), coll_(coll) {}

  StageUnits build(int s, double paired_share) {
    const ChunkLayers& ch = step_.chunks;
    const LayerCosts& lc = step_.lc;
    StageUnits u;
    u.fwd.resize(ch.virtual_stages), u.bwd.resize(ch.virtual_stages);
    for (int k = 0; k < ch.virtual_stages; ++k) {
      const int c = ch.of(s, k);
      if (ch.has_embedding(c))
        unit(u, k, lc.first_fwd, lc.first_bwd, static_cast<double>(step_.dims.params_embedding), 0);
      for (int l = ch.first[c]; l < ch.end(c); ++l) {
        LayerCosts::Part f = lc.fwd[l], b = lc.bwd[l];
        // Combined 1F1B EP overlap: the passes are as short as their pairs make them (as for the stage's costs), so
        // the data-parallel stream has less compute to hide behind.
        if (!lc.paired_ep_s.empty()) pair_layer(lc, l, paired_share, f, b);
        const ParamSplit w = layer_params(step_.job, step_.dims, l);
        unit(u, k, f, b, w.dense, w.expert);
      }
      if (ch.has_head(c)) unit(u, k, lc.last_fwd, lc.last_bwd, head_params(step_.dims), 0);
    }
    return u;
  }

 private:
  // Stage 3 gathers the unit's parameters before its forward and its backward; stages 2 and 3 reduce-scatter its
  // gradients after its backward.
  void unit(StageUnits& u, int k, const LayerCosts::Part& f, const LayerCosts::Part& b, double dense, double expert) {
    const bool host_syncs = step_.lc.host_syncs;
    const double g = step_.job.training.zero_stage == 3
                         ? coll_.seconds(workload::CollType::AllGather, dense, expert, step_.bpp.weight)
                         : 0.0;
    const double r = coll_.seconds(workload::CollType::ReduceScatter, dense, expert, step_.bpp.gradient);
    ZeroUnits& fwd = u.fwd[k];
    fwd.compute.push_back(f.total());
    fwd.issue.push_back(host_syncs ? 0.0 : f.issue_s);
    fwd.gather.push_back(g);
    fwd.scatter.push_back(0);
    ZeroUnits& bwd = u.bwd[k];
    bwd.compute.insert(bwd.compute.begin(), b.total());
    bwd.issue.insert(bwd.issue.begin(), host_syncs ? 0.0 : b.issue_s);
    bwd.gather.insert(bwd.gather.begin(), g);
    bwd.scatter.insert(bwd.scatter.begin(), r);
  }

  const DpStep& step_;
  ZeroCollectives& coll_;
};

}  // namespace

std::vector<StageUnits> zero_stage_units(const DpStep& step, const std::vector<double>& paired_share) {
  ZeroCollectives coll(step.coll);
  StageUnitsBuilder builder(step, coll);
  std::vector<StageUnits> units;
  for (int s = 0; s < step.chunks.stages; ++s) units.push_back(builder.build(s, paired_share[s]));
  return units;
}

}  // namespace stepsim::plan::estimate
