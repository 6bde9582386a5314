#pragma once
// What a kernel's or collective's name says: the compute category of a kernel, the collective an NCCL kernel
// or a PyTorch collective name stands for, and the size of an element of a dtype as PyTorch or NCCL spell it.
#include <optional>
#include <string>

#include "stepsim/workload/op.hpp"

namespace stepsim::trace {

// Category guessed from a (demangled) kernel name: attention (flash/fmha), gemm (gemm/xmma/cutlass/cublas/
// matmul), norm, embedding, loss, optimizer, else elementwise.
workload::ComputeCategory category_of_kernel(const std::string& name);

// What an NCCL kernel runs: a collective type, or a point-to-point exchange (SendRecv/Send/Recv).
struct NcclKind {
  bool p2p = false;
  workload::CollType coll = workload::CollType::AllReduce;
};
// From ncclKernel_<Coll>_... / ncclDevKernel_<Coll>_...; nullopt when the name does not say (ncclDevKernel_Generic).
std::optional<NcclKind> nccl_kind_of_kernel(const std::string& name);
// From PyTorch's collective name (allreduce, _allgather_base, all_to_allv, reduce_scatter_tensor_coalesced, send,
// ...); nullopt for names that move no data we model (barrier, wait) or that are unknown.
std::optional<NcclKind> nccl_kind_of_collective(const std::string& name);

// Bytes of one element: PyTorch dtype names ("Float", "c10::BFloat16", "long int") and NCCL kernel type suffixes
// ("float", "half", "int8_t", "__nv_bfloat16"); 0 when unknown.
int dtype_bytes(const std::string& dtype);
// The element type at the end of an NCCL kernel name (ncclKernel_AllReduce_RING_LL_Sum_float(...) -> "float").
std::string nccl_kernel_dtype(const std::string& name);

}  // namespace stepsim::trace
