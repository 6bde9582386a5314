#include "stepsim/plan/estimate/dp_collectives.hpp"

#include <algorithm>

#include "stepsim/cost/overlap/overlap_describe.hpp"
#include "stepsim/workload/dp_buckets.hpp"

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

double DpCollectives::compute_slowdown(const cost::OverlapModel* overlap, workload::CollType c, double bytes) const {
  if (overlap == nullptr || dp_shards_ <= 1 || bytes <= 0) return 0.0;
  workload::Op op;
  op.kind = workload::OpKind::Collective;
  op.coll = c;
  op.group = workload::GroupKind::Dp;
  op.bytes = static_cast<uint64_t>(bytes);
  const cost::OverlapComm comm = cost::describe_overlap_comm(op, comm_, dp_geo_);
  cost::OverlapCompute gemm;  // the passes' time is their GEMMs'
  return std::max(0.0, overlap->compute_slowdown(gemm, std::span<const cost::OverlapComm>(&comm, 1)));
}

double dp_compute_slowdown(const spec::JobSpec& job, const DpCollectives& coll, const workload::BytesPerParam& bpp,
                           const cost::OverlapModel* overlap) {
  const double limit = workload::dp_bucket_limit(job.training, coll.dp_shards());
  // Without a bucket limit (no overlapped reduction) a layer's gradients are what ZeRO-2/3 reduce at once.
  const double params = limit > 0 && limit < 1e15 ? limit : 1e8;
  const workload::CollType c = job.training.distributed_optimizer || job.training.zero_stage >= 2
                                   ? workload::CollType::ReduceScatter
                                   : workload::CollType::AllReduce;
  return coll.compute_slowdown(overlap, c, params * static_cast<double>(bpp.gradient));
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
