#include "stepsim/ingest/profile/nccl_op.hpp"

#include <array>
#include <cctype>

namespace stepsim::profile {
namespace {

constexpr std::array<std::string_view, kNcclOpCount> kOpNames{"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                                             "Reduce",    "Send",      "Recv",          "SendRecv",
                                                             "AllToAll",  "Unknown"};
struct TypeInfo {
  std::string_view name, kernel_short, kernel_c;
  int bytes;
};
constexpr std::array<TypeInfo, 12> kTypes{{{"int8", "i8", "int8_t", 1},
                                           {"uint8", "u8", "uint8_t", 1},
                                           {"int32", "i32", "int32_t", 4},
                                           {"uint32", "u32", "uint32_t", 4},
                                           {"int64", "i64", "int64_t", 8},
                                           {"uint64", "u64", "uint64_t", 8},
                                           {"float16", "f16", "half", 2},
                                           {"float32", "f32", "float", 4},
                                           {"float64", "f64", "double", 8},
                                           {"bfloat16", "bf16", "__nv_bfloat16", 2},
                                           {"float8e4m3", "f8e4m3", "__nv_fp8_e4m3", 1},
                                           {"float8e5m2", "f8e5m2", "__nv_fp8_e5m2", 1}}};

}  // namespace

std::string_view op_name(NcclOp op) { return kOpNames[static_cast<size_t>(op)]; }

std::optional<NcclOp> op_from_name(std::string_view name) {
  std::string folded;
  for (char c : name)
    if (c != '_') folded.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (int i = 0; i + 1 < kNcclOpCount; ++i) {
    std::string n;
    for (char c : kOpNames[i]) n.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (n == folded) return static_cast<NcclOp>(i);
  }
  return std::nullopt;
}

int datatype_bytes(int datatype) { return datatype >= 0 && datatype < 12 ? kTypes[datatype].bytes : 0; }

std::string_view datatype_name(int datatype) {
  return datatype >= 0 && datatype < 12 ? kTypes[datatype].name : std::string_view("unknown");
}

std::optional<int> datatype_from_kernel_token(std::string_view token) {
  for (int i = 0; i < 12; ++i)
    if (token == kTypes[i].kernel_short || token == kTypes[i].kernel_c || token == kTypes[i].name) return i;
  if (token == "char") return 0;
  if (token == "bfloat16") return 9;
  return std::nullopt;
}

std::string_view redop_name(int redop) {
  static constexpr std::array<std::string_view, 5> names{"sum", "prod", "max", "min", "avg"};
  return redop >= 0 && redop < 5 ? names[redop] : std::string_view("unknown");
}

}  // namespace stepsim::profile
