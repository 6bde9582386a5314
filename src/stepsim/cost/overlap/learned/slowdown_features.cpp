#include "stepsim/cost/overlap/learned/slowdown_features.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::overlap {
namespace {

// Feature columns (a namespace of their own: the dataset reader's column enum uses the same names).
namespace feature {
enum Index {
  kGpu, kKernelType, kIsolatedUs, kSm, kMem, kDram, kOcc, kL1, kL2, kCollective, kAlgorithm, kProtocol, kBucket,
  kChannels
};
}  // namespace feature

constexpr int kOtherKernelType = 9;  // after the nine GPU ComputeCategory values (gemm .. offload)
constexpr int kSendRecv = 6;         // after the six CollType values

// log2 keeps sizes from 1 B to 1 PiB exact in a float; trees are indifferent to monotone transforms.
float log2_bytes(uint64_t bytes) { return bytes == 0 ? NAN : static_cast<float>(std::log2(static_cast<double>(bytes))); }

}  // namespace

const std::array<const char*, kNumFeatures>& feature_names() {
  static const std::array<const char*, kNumFeatures> k = {
      "gpu", "kernel_type", "isolated_us", "sm_throughput_pct", "memory_throughput_pct", "dram_throughput_pct",
      "achieved_occupancy_pct", "l1_hit_rate_pct", "l2_hit_rate_pct", "collective", "algorithm", "protocol",
      "bucket_bytes", "channels"};
  return k;
}

std::string canonical_gpu(const hw::GpuCatalog& catalog_gpus, const std::string& name) {
  try {
    return catalog_gpus.find(name).name;
  } catch (const InputError&) {
    return name;  // a GPU the catalog does not list is still a valid category of its own
  }
}

float gpu_code(const hw::GpuCatalog& catalog_gpus, const std::vector<std::string>& gpus, const std::string& name) {
  const auto it = std::find(gpus.begin(), gpus.end(), canonical_gpu(catalog_gpus, name));
  return it == gpus.end() ? NAN : static_cast<float>(it - gpus.begin());
}

float kernel_type_code(std::string_view kernel_type) {
  for (int c = 0; c < kOtherKernelType; ++c) {
    if (kernel_type == workload::name_of(static_cast<workload::ComputeCategory>(c))) return static_cast<float>(c);
  }
  return kOtherKernelType;
}

float collective_code(std::string_view collective) {
  for (int c = 0; c < kSendRecv; ++c) {
    if (collective == workload::name_of(static_cast<workload::CollType>(c))) return static_cast<float>(c);
  }
  return collective == "sendrecv" ? kSendRecv : NAN;
}

float algorithm_code(std::string_view algorithm) {
  if (algorithm.empty()) return NAN;
  for (auto a : {cost::Algorithm::Ring, cost::Algorithm::Tree, cost::Algorithm::Nvls, cost::Algorithm::NvlsTree,
                 cost::Algorithm::Pat, cost::Algorithm::Direct, cost::Algorithm::CollNetDirect,
                 cost::Algorithm::CollNetChain}) {
    if (algorithm == cost::name_of(a)) return static_cast<float>(static_cast<int>(a));
  }
  return NAN;
}

float protocol_code(std::string_view protocol) {
  for (auto p : {cost::Protocol::LL, cost::Protocol::LL128, cost::Protocol::Simple}) {
    if (protocol == cost::name_of(p)) return static_cast<float>(static_cast<int>(p));
  }
  return NAN;
}

FeatureVector features_of(const SlowdownRow& r, float gpu) {
  FeatureVector f;
  f[feature::kGpu] = gpu;
  f[feature::kKernelType] = kernel_type_code(r.kernel_type);
  f[feature::kIsolatedUs] = static_cast<float>(r.isolated_us);
  f[feature::kSm] = static_cast<float>(r.sm_throughput_pct);
  f[feature::kMem] = static_cast<float>(r.memory_throughput_pct);
  f[feature::kDram] = static_cast<float>(r.dram_throughput_pct);
  f[feature::kOcc] = static_cast<float>(r.achieved_occupancy_pct);
  f[feature::kL1] = static_cast<float>(r.l1_hit_rate_pct);
  f[feature::kL2] = static_cast<float>(r.l2_hit_rate_pct);
  f[feature::kCollective] = collective_code(r.collective);
  f[feature::kAlgorithm] = algorithm_code(r.algorithm);
  f[feature::kProtocol] = protocol_code(r.protocol);
  f[feature::kBucket] = log2_bytes(r.bucket_bytes);
  f[feature::kChannels] = r.channels > 0 ? static_cast<float>(r.channels) : NAN;
  return f;
}

FeatureVector features_of(const cost::OverlapCompute& c, const cost::OverlapComm& comm, float gpu) {
  FeatureVector f;
  f[feature::kGpu] = gpu;
  f[feature::kKernelType] = static_cast<float>(static_cast<int>(c.category));
  f[feature::kIsolatedUs] = static_cast<float>(c.isolated_us);
  f[feature::kSm] = static_cast<float>(c.sm_throughput_pct);
  f[feature::kMem] = static_cast<float>(c.memory_throughput_pct);
  f[feature::kDram] = static_cast<float>(c.dram_throughput_pct);
  f[feature::kOcc] = static_cast<float>(c.achieved_occupancy_pct);
  f[feature::kL1] = static_cast<float>(c.l1_hit_rate_pct);
  f[feature::kL2] = static_cast<float>(c.l2_hit_rate_pct);
  f[feature::kCollective] = comm.kind == workload::OpKind::P2P ? kSendRecv : static_cast<float>(static_cast<int>(comm.coll));
  f[feature::kAlgorithm] = comm.algorithm == cost::Algorithm::Auto ? NAN : static_cast<float>(static_cast<int>(comm.algorithm));
  f[feature::kProtocol] = static_cast<float>(static_cast<int>(comm.protocol));
  f[feature::kBucket] = log2_bytes(comm.bytes);
  f[feature::kChannels] = comm.channels > 0 ? static_cast<float>(comm.channels) : NAN;
  return f;
}

}  // namespace stepsim::overlap
