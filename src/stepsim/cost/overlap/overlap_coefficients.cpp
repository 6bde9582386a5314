#include "stepsim/cost/overlap/overlap_coefficients.hpp"

#include <filesystem>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"
#include "stepsim/io/yaml_reader.hpp"

namespace stepsim::cost {
namespace {

using workload::CollType;
using workload::ComputeCategory;

// A slowdown of 100 (101x slower) is far beyond any measured (Echo Fig. 3 tops out near 8x).
constexpr double kMaxCoefficient = 100;

const char* comm_kind_name(int k) {
  return k < 6 ? workload::name_of(static_cast<CollType>(k)) : "sendrecv";
}

class CoefficientOverlapModel final : public OverlapModel {
 public:
  explicit CoefficientOverlapModel(OverlapCoefficients c) : c_(std::move(c)) {}

  double compute_slowdown(const OverlapCompute& compute, std::span<const OverlapComm> comms) const override {
    const int category = static_cast<int>(compute.category);
    if (category >= OverlapCoefficients::kCategories) return 0.0;  // host-side time: no GPU kernel to slow
    const double base = c_.compute[category];
    double s = 0;
    for (const OverlapComm& m : comms) {
      const int kind = m.kind == workload::OpKind::P2P ? 6 : static_cast<int>(m.coll);
      s += base * c_.comm[kind];
    }
    return s;
  }

 private:
  OverlapCoefficients c_;
};

}  // namespace

OverlapCoefficients OverlapCoefficients::load(const std::string& path) {
  const YAML::Node root = spec::parse_yaml(spec::read_text_file(path, "overlap coefficient file"), path);
  spec::StrictSection top(root, "", path);
  OverlapCoefficients c;
  c.source = top.get_string("source", "");
  spec::StrictSection compute(top.child("compute"), "compute", path);
  for (int i = 0; i < kCategories; ++i) {
    const std::string key = workload::name_of(static_cast<ComputeCategory>(i));
    if (!compute.has(key)) compute.fail(key, "is required (slowdown of a " + key + " kernel, 0.25 = 25% slower)");
    c.compute[i] = compute.get_double(key, 0, 0, kMaxCoefficient);
  }
  compute.finish();
  spec::StrictSection comm(top.child("comm"), "comm", path);
  for (int k = 0; k < kCommKinds; ++k) {
    const std::string key = comm_kind_name(k);
    if (!comm.has(key)) comm.fail(key, "is required (multiplier of the compute slowdowns, 1 = as measured)");
    c.comm[k] = comm.get_double(key, 0, 0, kMaxCoefficient);
  }
  comm.finish();
  top.finish();
  return c;
}

std::string OverlapCoefficients::default_path() {
  return (std::filesystem::path(hw::data_dir()) / "overlap.yaml").string();
}

std::unique_ptr<OverlapModel> make_coefficient_overlap_model(OverlapCoefficients c) {
  return std::make_unique<CoefficientOverlapModel>(std::move(c));
}

}  // namespace stepsim::cost
