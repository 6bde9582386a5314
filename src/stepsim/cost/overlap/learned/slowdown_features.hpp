#pragma once
// The feature vector of the learned overlap model: Echo Table 4's communication and computation features plus the
// GPU type, encoded as floats for XGBoost. Categoricals are integer codes (trees isolate a code with two
// threshold splits); unknown values are NaN, which XGBoost treats as missing. docs/SLOWDOWN-MODEL.md.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/cost/overlap/overlap_model.hpp"
#include "stepsim/cost/overlap/learned/slowdown_dataset.hpp"

namespace stepsim::overlap {

constexpr int kNumFeatures = 14;
using FeatureVector = std::array<float, kNumFeatures>;

// Feature names in column order, as printed by `stepsim slowdown eval` and stored in the model.
const std::array<const char*, kNumFeatures>& feature_names();

// GPU type: the stepsim catalog name when the catalog knows the name (so "NVIDIA H100 80GB HBM3" and "H100" are
// one GPU), else the name as written.
std::string canonical_gpu(const hw::GpuCatalog& catalog_gpus, const std::string& name);

// Codes. kernel_type: workload::ComputeCategory's index, 9 for any other word. collective: workload::CollType's
// index, 6 for sendrecv. algorithm: cost::Algorithm's index, NaN for "" (unknown). protocol: LL 0, LL128 1,
// Simple 2, NaN for "".
float kernel_type_code(std::string_view kernel_type);
float collective_code(std::string_view collective);
float algorithm_code(std::string_view algorithm);
float protocol_code(std::string_view protocol);

// gpu_code: index of the row's GPU in the model's GPU list, NaN when the model has not seen it.
FeatureVector features_of(const SlowdownRow& row, float gpu_code);
FeatureVector features_of(const cost::OverlapCompute& compute, const cost::OverlapComm& comm, float gpu_code);

// Index of canonical_gpu(name) in `gpus` (sorted canonical names), NaN when absent.
float gpu_code(const hw::GpuCatalog& catalog_gpus, const std::vector<std::string>& gpus, const std::string& name);

}  // namespace stepsim::overlap
