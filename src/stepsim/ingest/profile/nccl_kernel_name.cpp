#include "stepsim/ingest/profile/nccl_kernel_name.hpp"

#include <array>

namespace stepsim::profile {
namespace {

// Longest first, so COLLNET_DIRECT wins over a shorter prefix and LL128 over LL.
constexpr std::array<std::string_view, 7> kAlgos{"COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "RING", "TREE",
                                                 "NVLS", "PAT"};
constexpr std::array<std::string_view, 3> kProtos{"LL128", "SIMPLE", "LL"};
constexpr std::array<std::string_view, 5> kRedops{"SumPostDiv", "PreMulSum", "MinMax", "Prod", "Sum"};
constexpr std::array<std::string_view, 20> kKernelTypeTokens{"__nv_bfloat16", "__nv_fp8_e4m3", "__nv_fp8_e5m2", "uint8_t", "int8_t",
                                                  "uint32_t",      "int32_t",       "uint64_t",      "int64_t", "f8e4m3",
                                                  "f8e5m2",        "bf16",          "half",          "float",   "double",
                                                  "char",          "f16",           "f32",           "f64",     "i8"};
constexpr std::array<std::string_view, 5> kMoreTypes{"u8", "i32", "u32", "i64", "u64"};
constexpr std::array<std::string_view, 10> kColls{"ReduceScatter", "AllReduce", "AllGatherV", "AllGather", "Broadcast",
                                                  "SendRecv",      "Reduce",    "AllToAll",   "Send",      "Recv"};

// `word` at the start of s and followed by '_' or the end.
bool eat(std::string_view& s, std::string_view word) {
  if (!s.starts_with(word) || (s.size() > word.size() && s[word.size()] != '_')) return false;
  s.remove_prefix(std::min(s.size(), word.size() + 1));
  return true;
}

template <size_t N>
std::string_view eat_any(std::string_view& s, const std::array<std::string_view, N>& words) {
  for (auto w : words)
    if (eat(s, w)) return w;
  return {};
}

}  // namespace

std::optional<NcclKernelName> parse_nccl_kernel_name(std::string_view name) {
  name = name.substr(0, name.find('('));
  // Demangled names of templated kernels may start with "void ".
  if (name.starts_with("void ")) name.remove_prefix(5);
  std::string_view s = name;
  NcclKernelName k;
  if (!(eat(s, "ncclDevKernel") || eat(s, "ncclKernel"))) {
    if (name.find("nccl") == std::string_view::npos) return std::nullopt;
    for (auto c : kColls)
      if (name.find(c) != std::string_view::npos) {
        k.op = c == "AllGatherV" ? NcclOp::AllGather : op_from_name(c).value_or(NcclOp::Unknown);
        return k;
      }
    return k;
  }
  const std::string_view coll = eat_any(s, kColls);
  if (coll.empty()) return k;  // ncclDevKernel_Generic, _Generic_1, …
  k.op = coll == "AllGatherV" ? NcclOp::AllGather : op_from_name(coll).value_or(NcclOp::Unknown);
  // The remaining fields come in either order (new: redop_type_ALGO_PROTO; old: ALGO_PROTO_redop_type).
  for (int guard = 0; guard < 8 && !s.empty(); ++guard) {
    if (auto a = eat_any(s, kAlgos); !a.empty()) k.algorithm = a;
    else if (auto p = eat_any(s, kProtos); !p.empty()) k.protocol = p;
    else if (auto r = eat_any(s, kRedops); !r.empty()) k.redop = r;
    else if (auto t = eat_any(s, kKernelTypeTokens); !t.empty()) k.datatype = datatype_from_kernel_token(t).value_or(-1);
    else if (auto t2 = eat_any(s, kMoreTypes); !t2.empty()) k.datatype = datatype_from_kernel_token(t2).value_or(-1);
    else break;  // an unknown suffix: keep what was read
  }
  // Send/Recv kernels run as SendRecv in every NCCL version; report them so, the aligner fuses log pairs.
  if (k.op == NcclOp::Send || k.op == NcclOp::Recv) k.op = NcclOp::SendRecv;
  return k;
}

}  // namespace stepsim::profile
