#pragma once
// What an overlap model is told about a compute op and the communication beside it, built the same way by the event
// engine (sim/engine.cpp) and the planner's one-rank replay (sim/stream_replay.cpp), so that both slow a kernel alike.
#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/cost/overlap/overlap_model.hpp"
#include "stepsim/workload/op.hpp"

namespace stepsim::cost {

// The compute op's category, isolated time and roofline throughputs (percent of the GPU's peak FLOP/s and HBM
// bandwidth; NaN where the peak is unknown or the op takes no time).
OverlapCompute describe_overlap_compute(const workload::Op& op, double peak_flops, double hbm_Bps);

// A collective (its algorithm, protocol and channels as `comm` chooses them for the group's geometry) or a
// send/receive (direct, channels unknown) in flight beside it.
OverlapComm describe_overlap_comm(const workload::Op& c, const CollectiveModel& comm, const GroupGeometry& geo);

// Host time (a traced CPU gap, a CPU optimizer step) runs on no SM: communication kernels cannot slow it.
inline bool slowed_by_communication(const workload::Op& op) {
  return op.kind == workload::OpKind::Compute && op.category != workload::ComputeCategory::Host &&
         op.category != workload::ComputeCategory::CpuOptimizer;
}

}  // namespace stepsim::cost
