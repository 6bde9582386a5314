#pragma once
// Op types of `stepsim compare`: a compute kernel's category (gemm, attention, elementwise, ...), a collective's
// name (all_reduce, all_to_all, ...), send_recv for point-to-point exchanges, and idle for the step's time with no
// op running. Both sides of a comparison use these names, so a simulated gemm meets a measured gemm.
#include <string>

#include "stepsim/workload/op.hpp"

namespace stepsim::compare {

inline constexpr const char* kIdle = "idle";
inline constexpr const char* kSendRecv = "send_recv";

std::string type_of(workload::OpKind kind, workload::ComputeCategory category, workload::CollType coll);

// Report order: compute categories, then collectives (both in stepsim's enum order), send_recv, types this
// version does not know (by name), idle last.
bool type_before(const std::string& a, const std::string& b);

}  // namespace stepsim::compare
