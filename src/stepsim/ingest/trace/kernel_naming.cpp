#include "stepsim/ingest/trace/kernel_naming.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace stepsim::trace {
namespace {

using workload::CollType;
using workload::ComputeCategory;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// The kernel name without "void " and its parameter list.
std::string_view stem(std::string_view s) {
  if (s.substr(0, 5) == "void ") s.remove_prefix(5);
  return s.substr(0, s.find('('));
}

}  // namespace

ComputeCategory category_of_kernel(const std::string& name) {
  const std::string s = lower(stem(name));
  if (has(s, "flash") || has(s, "fmha") || has(s, "attention")) return ComputeCategory::Attention;
  if (has(s, "gemm") || has(s, "xmma") || has(s, "cutlass") || has(s, "cublas") || has(s, "matmul"))
    return ComputeCategory::Gemm;
  if (has(s, "norm") || has(s, "rms")) return ComputeCategory::Norm;
  if (has(s, "embedding")) return ComputeCategory::Embedding;
  if (has(s, "cross_entropy") || has(s, "nll_loss")) return ComputeCategory::Loss;
  if (has(s, "adam") || has(s, "adagrad")) return ComputeCategory::Optimizer;
  return ComputeCategory::Elementwise;
}

std::optional<NcclKind> nccl_kind_of_kernel(const std::string& name) {
  std::string_view s = stem(name);
  for (std::string_view p : {"ncclKernel_", "ncclDevKernel_"})
    if (s.substr(0, p.size()) == p) s.remove_prefix(p.size());
  const std::string_view coll = s.substr(0, s.find('_'));
  if (coll == "AllReduce") return NcclKind{false, CollType::AllReduce};
  if (coll == "AllGather") return NcclKind{false, CollType::AllGather};
  if (coll == "ReduceScatter") return NcclKind{false, CollType::ReduceScatter};
  if (coll == "Broadcast") return NcclKind{false, CollType::Broadcast};
  if (coll == "Reduce") return NcclKind{false, CollType::Reduce};
  if (coll == "SendRecv" || coll == "Send" || coll == "Recv") return NcclKind{true, CollType::AllToAll};
  return std::nullopt;
}

std::optional<NcclKind> nccl_kind_of_collective(const std::string& name) {
  std::string s;
  for (char c : lower(name))
    if (c != '_' && c != ':') s += c;
  if (s.rfind("allreduce", 0) == 0) return NcclKind{false, CollType::AllReduce};
  if (has(s, "allgather")) return NcclKind{false, CollType::AllGather};
  if (has(s, "reducescatter")) return NcclKind{false, CollType::ReduceScatter};
  if (has(s, "alltoall")) return NcclKind{false, CollType::AllToAll};
  if (s.rfind("broadcast", 0) == 0) return NcclKind{false, CollType::Broadcast};
  if (s == "reduce") return NcclKind{false, CollType::Reduce};
  if (s == "send" || s == "recv" || s == "sendrecv" || s == "batchisendirecv") return NcclKind{true, CollType::AllToAll};
  return std::nullopt;
}

int dtype_bytes(const std::string& dtype) {
  std::string s = lower(dtype);
  if (s.rfind("c10::", 0) == 0) s = s.substr(5);
  if (s.rfind("__nv_", 0) == 0) s = s.substr(5);
  if (s == "float" || s == "float32" || s == "int" || s == "int32" || s == "int32_t" || s == "uint32_t" ||
      s == "unsigned int" || s == "f32" || s == "i32" || s == "u32")
    return 4;
  if (s == "double" || s == "float64" || s == "long" || s == "long int" || s == "int64" || s == "int64_t" ||
      s == "uint64_t" || s == "long long" || s == "f64" || s == "i64" || s == "u64")
    return 8;
  if (s == "half" || s == "float16" || s == "bfloat16" || s == "short" || s == "short int" || s == "int16" ||
      s == "f16" || s == "bf16")
    return 2;
  if (s == "byte" || s == "char" || s == "unsigned char" || s == "signed char" || s == "bool" || s == "int8" ||
      s == "int8_t" || s == "uint8" || s == "uint8_t" || s == "i8" || s == "u8" || s.rfind("float8", 0) == 0 ||
      s.rfind("fp8", 0) == 0 || s.rfind("f8", 0) == 0)
    return 1;
  return 0;
}

std::string nccl_kernel_dtype(const std::string& name) {
  const std::string_view s = stem(name);
  const size_t u = s.rfind('_');
  if (u == std::string_view::npos) return {};
  std::string_view t = s.substr(u + 1);
  if (t == "t" && u > 0) {  // int8_t, uint8_t, ...: the suffix itself holds an underscore
    const size_t u2 = s.rfind('_', u - 1);
    if (u2 != std::string_view::npos) t = s.substr(u2 + 1);
  }
  return std::string(t);
}

}  // namespace stepsim::trace
