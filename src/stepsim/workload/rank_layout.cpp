#include "stepsim/workload/rank_layout.hpp"

#include <algorithm>

namespace stepsim::workload {

RankLayout::RankLayout(int tensor, int context, int data, int pipeline, int expert, int gpus_per_node,
                       int expert_tensor, int cp_a2a)
    : t_(tensor), c_(context), d_(data), p_(pipeline), e_(expert), gpn_(gpus_per_node),
      et_(expert_tensor > 0 ? expert_tensor : tensor), ca_(cp_a2a > 0 ? cp_a2a : 1) {}

// Hierarchical CP (Megatron-Core's create_hierarchical_groups over a CP group): level 1 = ca adjacent CP indices
// (cp / ca its group, cp % ca its index), level 2 = the CP indices ca apart (cp % ca its group, cp / ca its index).

// Expert groups (Megatron-Core's expert rank generator, order tp-ep-dp): a stage's ranks v = tp + t*(cp + c*dp) are
// re-split as v = etp + et*(ep + e*edp). With et = t this is EP folded into context x data, as before.

RankCoord RankLayout::coord(int rank) const {
  RankCoord rc;
  rc.tp = rank % t_;
  rank /= t_;
  rc.cp = rank % c_;
  rank /= c_;
  rc.dp = rank % d_;
  rc.pp = rank / d_;
  return rc;
}

int RankLayout::group_size(GroupKind g) const {
  switch (g) {
    case GroupKind::Tp: return t_;
    case GroupKind::Cp: return c_;
    case GroupKind::Ep: return e_;
    case GroupKind::Pp: return p_;
    case GroupKind::Dp: return c_ * d_;
    case GroupKind::Edp: return t_ * c_ * d_ / (et_ * e_);
    case GroupKind::Etp: return et_;
    case GroupKind::HcpA2a: return ca_;
    case GroupKind::HcpRing: return c_ / ca_;
    case GroupKind::World: return world();
    case GroupKind::kCount: break;
  }
  return 1;
}

int RankLayout::group_id(GroupKind g, int rank) const {
  const RankCoord rc = coord(rank);
  const int u = rc.cp + c_ * rc.dp;  // combined context-data index
  switch (g) {
    case GroupKind::Tp: return rank / t_;
    case GroupKind::Cp: return rc.tp + t_ * (rc.dp + d_ * rc.pp);
    case GroupKind::Dp: return rc.tp + t_ * rc.pp;
    case GroupKind::Pp: return rank % (t_ * c_ * d_);
    case GroupKind::Ep: {
      const int v = rc.tp + t_ * u, edp_n = t_ * c_ * d_ / (et_ * e_);
      return v % et_ + et_ * (v / (et_ * e_) + edp_n * rc.pp);
    }
    case GroupKind::Edp: {
      const int v = rc.tp + t_ * u;
      return v % et_ + et_ * ((v / et_) % e_ + e_ * rc.pp);
    }
    case GroupKind::Etp: return rank / et_;  // et_ consecutive ranks (a stage's ranks are a multiple of et_ e_)
    case GroupKind::HcpA2a: return rc.tp + t_ * (rc.cp / ca_ + (c_ / ca_) * (rc.dp + d_ * rc.pp));
    case GroupKind::HcpRing: return rc.tp + t_ * (rc.cp % ca_ + ca_ * (rc.dp + d_ * rc.pp));
    case GroupKind::World: return 0;
    case GroupKind::kCount: break;
  }
  return 0;
}

int RankLayout::index_in_group(GroupKind g, int rank) const {
  const RankCoord rc = coord(rank);
  const int u = rc.cp + c_ * rc.dp;
  switch (g) {
    case GroupKind::Tp: return rc.tp;
    case GroupKind::Cp: return rc.cp;
    case GroupKind::Dp: return u;
    case GroupKind::Pp: return rc.pp;
    case GroupKind::Ep: return ((rc.tp + t_ * u) / et_) % e_;
    case GroupKind::Edp: return (rc.tp + t_ * u) / (et_ * e_);
    case GroupKind::Etp: return rank % et_;
    case GroupKind::HcpA2a: return rc.cp % ca_;
    case GroupKind::HcpRing: return rc.cp / ca_;
    case GroupKind::World: return rank;
    case GroupKind::kCount: break;
  }
  return 0;
}

int RankLayout::member(GroupKind g, int gid, int index) const {
  const int cd = c_ * d_;
  switch (g) {
    case GroupKind::Tp: return gid * t_ + index;
    case GroupKind::Cp: {
      const int tp = gid % t_, rest = gid / t_;  // rest = dp + d*pp
      return tp + t_ * (index + c_ * rest);
    }
    case GroupKind::Dp: {
      const int tp = gid % t_, pp = gid / t_;
      return tp + t_ * (index + cd * pp);
    }
    case GroupKind::Pp: return gid + t_ * cd * index;
    case GroupKind::Ep: {
      const int edp_n = t_ * cd / (et_ * e_);
      const int etp = gid % et_, rest = gid / et_;
      const int edp = rest % edp_n, pp = rest / edp_n;
      return etp + et_ * (index + e_ * edp) + t_ * cd * pp;
    }
    case GroupKind::Edp: {
      const int etp = gid % et_, rest = gid / et_;
      const int ep = rest % e_, pp = rest / e_;
      return etp + et_ * (ep + e_ * index) + t_ * cd * pp;
    }
    case GroupKind::Etp: return gid * et_ + index;
    case GroupKind::HcpA2a: {
      const int tp = gid % t_, rest = gid / t_, groups = c_ / ca_;
      return tp + t_ * ((rest % groups) * ca_ + index + c_ * (rest / groups));
    }
    case GroupKind::HcpRing: {
      const int tp = gid % t_, rest = gid / t_;
      return tp + t_ * (index * ca_ + rest % ca_ + c_ * (rest / ca_));
    }
    case GroupKind::World: return index;
    case GroupKind::kCount: break;
  }
  return 0;
}

bool RankLayout::own_group(GroupKind k) const {
  const bool same_as_other = (k == GroupKind::Etp && et_ == t_) ||
                             ((k == GroupKind::HcpA2a || k == GroupKind::HcpRing) && group_size(k) == c_);
  return k != GroupKind::World && group_size(k) > 1 && !same_as_other;
}

int RankLayout::communicators() const {
  int n = 0;
  for (int g = 0; g < kNumGroupKinds; ++g) n += own_group(static_cast<GroupKind>(g));
  return n;
}

GroupGeometry RankLayout::geometry(GroupKind g, int gid) const {
  const int n = group_size(g);
  GroupGeometry geo;
  geo.ranks = n;
  // Members are in increasing rank order, so nodes appear in runs.
  int nodes = 0, run = 0, best = 0, last = -1;
  for (int i = 0; i < n; ++i) {
    const int node = node_of(member(g, gid, i));
    if (node != last) {
      ++nodes;
      run = 0;
      last = node;
    }
    best = std::max(best, ++run);
  }
  geo.nodes = nodes;
  geo.ranks_per_node = best;
  return geo;
}

int RankLayout::next_stage_rank(int rank) const {
  const int stride = t_ * c_ * d_;
  const RankCoord rc = coord(rank);
  return rank + ((rc.pp + 1 == p_) ? -(p_ - 1) * stride : stride);
}

int RankLayout::prev_stage_rank(int rank) const {
  const int stride = t_ * c_ * d_;
  const RankCoord rc = coord(rank);
  return rank + ((rc.pp == 0) ? (p_ - 1) * stride : -stride);
}

RankLayout job_rank_layout(const spec::JobSpec& job) {
  const auto& par = job.parallelism;
  return RankLayout(par.tensor, par.context, par.data, par.pipeline, par.expert,
                    std::min(job.cluster.gpus_per_node, job.cluster.num_gpus), par.expert_tensor, par.cp_a2a_size());
}

}  // namespace stepsim::workload
