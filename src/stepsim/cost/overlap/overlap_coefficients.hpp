#pragma once
// Coefficient overlap model (simulation.overlap_model: coefficients): a compute kernel's slowdown per compute
// category, scaled per kind of communication kernel, summed over the communication kernels in flight (each takes
// its own SMs and memory bandwidth). Defaults in data/overlap.yaml from Echo Tables 2-3; docs/OVERLAP.md.
#include <array>
#include <memory>
#include <string>

#include "stepsim/cost/overlap/overlap_model.hpp"
#include "stepsim/workload/op.hpp"

namespace stepsim::cost {

struct OverlapCoefficients {
  // workload::ComputeCategory up to offload (GPU work; the host-side ones after it)
  static constexpr int kCategories = static_cast<int>(workload::ComputeCategory::Offload) + 1;
  static constexpr int kCommKinds = 7;    // workload::CollType, then send/recv
  std::array<double, kCategories> compute{};  // slowdown under one communication kernel of multiplier 1
  std::array<double, kCommKinds> comm{};      // multiplier per kind of communication
  std::string source;                         // where the numbers come from (the file's `source`)

  // Reads a coefficient file (data/overlap.yaml's layout); every key required, values in [0, 100].
  static OverlapCoefficients load(const std::string& path);
  // data/overlap.yaml of the project's data directory.
  static std::string default_path();
};

std::unique_ptr<OverlapModel> make_coefficient_overlap_model(OverlapCoefficients c);

}  // namespace stepsim::cost
