#include "stepsim/plan/estimate/dp_collectives.hpp"

namespace stepsim::plan::estimate {

DpCollectives::DpCollectives(const workload::RankLayout& layout, const cost::CollectiveModel& comm)
    : comm_(comm),
      dp_geo_(layout.geometry(workload::GroupKind::Dp, 0)),
      edp_geo_(layout.geometry(workload::GroupKind::Edp, 0)),
      dp_shards_(layout.group_size(workload::GroupKind::Dp)),
      edp_shards_(layout.group_size(workload::GroupKind::Edp)) {}

double DpCollectives::seconds(workload::CollType c, bool expert, double bytes) const {
  const int64_t shards = expert ? edp_shards_ : dp_shards_;
  if (shards <= 1 || bytes <= 0) return 0.0;
  return static_cast<double>(comm_.collective_ns(c, static_cast<uint64_t>(bytes), expert ? edp_geo_ : dp_geo_)) * 1e-9;
}

workload::CollType DpStep::reduce() const {
  return dist() && !job.training.zero1_grad_all_reduce ? workload::CollType::ReduceScatter
                                                       : workload::CollType::AllReduce;
}

double DpStep::reduce_s(bool expert, double params) const {
  return coll.seconds(reduce(), expert, params * static_cast<double>(bpp.gradient));
}

double DpStep::gather_s(bool expert, double params) const {
  return coll.seconds(workload::CollType::AllGather, expert, params * bpp.weight);
}

}  // namespace stepsim::plan::estimate
