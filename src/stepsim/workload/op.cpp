#include "stepsim/workload/op.hpp"

namespace stepsim::workload {

const char* name_of(Stream s) {
  static const char* const k[] = {"compute", "tp", "cp", "ep", "pp", "dp", "memcpy", "pp_prev"};
  return k[static_cast<int>(s)];
}
const char* name_of(GroupKind g) {
  static const char* const k[] = {"tp", "cp", "ep", "pp", "dp", "edp", "etp", "hcp_a2a", "hcp_ring", "world"};
  return k[static_cast<int>(g)];
}
const char* name_of(CollType c) {
  static const char* const k[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce",
                                  "send_recv"};
  return k[static_cast<int>(c)];
}
const char* name_of(ComputeCategory c) {
  static const char* const k[] = {"gemm", "grouped_gemm", "attention", "elementwise", "norm",
                                  "embedding", "loss", "optimizer", "scatter_add", "offload", "cpu_optimizer", "host"};
  return k[static_cast<int>(c)];
}
const char* name_of(Phase p) {
  static const char* const k[] = {"forward", "backward", "recompute", "optimizer"};
  return k[static_cast<int>(p)];
}

double bus_factor(CollType c, int n) {
  if (n <= 1) return 0.0;
  const double nn = n;
  switch (c) {
    case CollType::AllReduce: return 2.0 * (nn - 1) / nn;
    case CollType::AllGather:
    case CollType::ReduceScatter:
    case CollType::AllToAll: return (nn - 1) / nn;
    case CollType::Broadcast:
    case CollType::Reduce:
    case CollType::SendRecv: return 1.0;
  }
  return 1.0;
}

}  // namespace stepsim::workload
