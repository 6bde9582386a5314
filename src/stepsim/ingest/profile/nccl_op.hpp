#pragma once
// NCCL operation vocabulary shared by the log parser, the kernel-name parser and the aligner: operation
// names as NCCL prints them in COLL lines and kernel names, ncclDataType_t / ncclRedOp_t enumerations.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stepsim::profile {

// AllToAll: RCCL's own all-to-all collective (its COLL line; NCCL runs all-to-all as grouped Send/Recv). Unknown last.
enum class NcclOp : uint8_t { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, Send, Recv, SendRecv, AllToAll, Unknown };
inline constexpr int kNcclOpCount = 10;

std::string_view op_name(NcclOp op);
// "AllReduce", "allreduce", "all_reduce" → AllReduce; nullopt for anything else.
std::optional<NcclOp> op_from_name(std::string_view name);
inline bool is_p2p(NcclOp op) { return op == NcclOp::Send || op == NcclOp::Recv || op == NcclOp::SendRecv; }

// ncclDataType_t (nccl.h): 0 int8 … 11 float8e5m2. Bytes per element, 0 for an unknown enum.
int datatype_bytes(int datatype);
std::string_view datatype_name(int datatype);  // "unknown" outside 0..11
// Short kernel-name spellings (i8 … f8e5m2) and the older C type spellings (int8_t, float, half, …).
std::optional<int> datatype_from_kernel_token(std::string_view token);
std::string_view redop_name(int redop);  // ncclRedOp_t: 0 sum 1 prod 2 max 3 min 4 avg

}  // namespace stepsim::profile
