#pragma once
// One collective over a stage's data-parallel group (the expert-data-parallel one for expert parameters), timed by
// the job's collective model on rank 0's groups; 0 where the group has one rank. And what a stage's data-parallel
// traffic (gradient reductions, parameter gathers) depends on.
#include <cstdint>

#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/cost/overlap/overlap_model.hpp"
#include "stepsim/plan/estimate/stage_costs.hpp"
#include "stepsim/workload/rank_layout.hpp"
#include "stepsim/workload/static_memory.hpp"

namespace stepsim::plan::estimate {

class DpCollectives {
 public:
  DpCollectives(const workload::RankLayout& layout, const cost::CollectiveModel& comm);
  double seconds(workload::CollType c, bool expert, double bytes) const;
  int64_t dp_shards() const { return dp_shards_; }
  int64_t edp_shards() const { return edp_shards_; }
  bool any() const { return dp_shards_ > 1 || edp_shards_ > 1; }  // some gradients are reduced at all
  // The overlap model's slowdown of a kernel while one collective of `bytes` runs on the data-parallel group beside
  // it (0 without a model or a group).
  double compute_slowdown(const cost::OverlapModel* overlap, workload::CollType c, double bytes) const;

 private:
  const cost::CollectiveModel& comm_;
  cost::GroupGeometry dp_geo_, edp_geo_;
  int64_t dp_shards_, edp_shards_;
};

// The job, its probe and its data-parallel groups: what a stage's data-parallel traffic depends on.
struct DpStep {
  const spec::JobSpec& job;
  const LayerCosts& lc;
  const workload::ModelDims& dims;
  const ChunkLayers& chunks;
  const DpCollectives& coll;
  workload::BytesPerParam bpp;
  // The overlap model's slowdown of the compute a gradient bucket's reduction (or a unit's gather) runs beside: a pass
  // lasts its kernels' time plus s / (1 + s) of the time the data-parallel stream is busy during it (docs/PLANNER.md).
  double slowdown = 0;

  bool dist() const { return job.training.distributed_optimizer; }
  workload::CollType reduce() const;  // reduce-scatter under the distributed optimizer, else all-reduce
  double reduce_s(bool expert, double params) const;
  double gather_s(bool expert, double params) const;  // the distributed optimizer's parameter all-gather
};

// The slowdown of DpStep: the overlap model's, beside one gradient bucket's reduction on the data-parallel group.
double dp_compute_slowdown(const spec::JobSpec& job, const DpCollectives& coll, const workload::BytesPerParam& bpp,
                           const cost::OverlapModel* overlap);

}  // namespace stepsim::plan::estimate
