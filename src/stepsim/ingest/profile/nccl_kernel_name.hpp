#pragma once
// NCCL kernel names as CUPTI reports them: ncclDevKernel_<Coll>_<RedOp>_<type>_<ALGO>_<PROTO> (NCCL >= 2.19,
// e.g. ncclDevKernel_AllReduce_Sum_f16_RING_LL), ncclKernel_<Coll>_<ALGO>_<PROTO>_<RedOp>_<type> (older, e.g.
// ncclKernel_AllReduce_RING_LL_Sum_float), ncclDevKernel_SendRecv and the generic kernels; arguments after '('
// are ignored.
#include <optional>
#include <string>
#include <string_view>

#include "stepsim/ingest/profile/nccl_op.hpp"

namespace stepsim::profile {

struct NcclKernelName {
  NcclOp op = NcclOp::Unknown;  // Unknown for ncclDevKernel_Generic and other kernels without a collective
  std::string redop;            // "Sum", "Prod", "MinMax", "PreMulSum", "SumPostDiv"; empty when absent
  int datatype = -1;            // ncclDataType_t, -1 when absent
  std::string algorithm;        // "RING", "TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"
  std::string protocol;         // "LL", "LL128", "SIMPLE"
};

// nullopt when the name is not an NCCL kernel at all. A name with "nccl" in it that does not follow either
// pattern falls back to the first collective name found in it (thesis §4.2.1).
std::optional<NcclKernelName> parse_nccl_kernel_name(std::string_view name);

}  // namespace stepsim::profile
