#pragma once
// RankLayout: Megatron-Core's default rank order (tp-cp-ep-dp-pp, tensor-parallel rank fastest):
//   global rank = tp + t*(cp + c*(dp + d*pp)).
// Expert parallelism is folded into the combined (cp, dp) index u = cp + c*dp: ep = u % e, edp = u / e.
// The data-parallel group used for gradients spans context ranks too (Megatron's DP-with-CP group).
#include <cstdint>

#include "stepsim/job/job_spec.hpp"
#include "stepsim/workload/group_geometry.hpp"
#include "stepsim/workload/op.hpp"

namespace stepsim::workload {

struct RankCoord {
  int tp = 0, cp = 0, dp = 0, pp = 0;
};

class RankLayout {
 public:
  RankLayout() = default;
  // expert_tensor 0 = tensor (experts split like the dense layers); else MoE parallel folding.
  // cp_a2a: the first level of hierarchical context parallelism (a adjacent CP ranks; 1 = none).
  RankLayout(int tensor, int context, int data, int pipeline, int expert, int gpus_per_node, int expert_tensor = 0,
             int cp_a2a = 1);

  int world() const { return t_ * c_ * d_ * p_; }
  int tensor() const { return t_; }
  int context() const { return c_; }
  int data() const { return d_; }
  int pipeline() const { return p_; }
  int expert() const { return e_; }
  int expert_tensor() const { return et_; }
  int gpus_per_node() const { return gpn_; }

  RankCoord coord(int rank) const;
  int rank_of(const RankCoord& rc) const { return rc.tp + t_ * (rc.cp + c_ * (rc.dp + d_ * rc.pp)); }
  int node_of(int rank) const { return rank / gpn_; }

  int group_size(GroupKind g) const;
  int num_groups(GroupKind g) const { return world() / group_size(g); }
  int group_id(GroupKind g, int rank) const;
  int index_in_group(GroupKind g, int rank) const;
  int member(GroupKind g, int group_id, int index) const;
  GroupGeometry geometry(GroupKind g, int group_id) const;
  // NCCL communicators a rank of a built workload creates: one per dimension whose group has more than one rank (a
  // world-wide one exists only in traced runs).
  int communicators() const;
  // Whether kind `g` is a group of its own: more than one rank and not the same ranks as another kind (the expert-
  // tensor group when it is the TP group, a hierarchical CP level that is the whole CP group), never World.
  bool own_group(GroupKind g) const;

  // Pipeline ring neighbours (stage +-1 modulo pipeline, same tp/cp/dp).
  int next_stage_rank(int rank) const;
  int prev_stage_rank(int rank) const;

 private:
  int t_ = 1, c_ = 1, d_ = 1, p_ = 1, e_ = 1, gpn_ = 1, et_ = 1, ca_ = 1;
};

// The layout the Megatron builder lays a job's ranks out with: its parallel sizes, nodes of gpus_per_node (or the
// whole job when smaller), the expert tensor parallel size and hierarchical CP's all-to-all level.
RankLayout job_rank_layout(const spec::JobSpec& job);

}  // namespace stepsim::workload
