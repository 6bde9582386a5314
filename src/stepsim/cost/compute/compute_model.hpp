#pragma once
// ComputeModel: time of one compute op on one GPU, before per-rank slow-down factors.
#include <cstdint>
#include <memory>

#include "stepsim/catalog/efficiency_table.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/job/job_spec.hpp"
#include "stepsim/workload/op.hpp"

namespace stepsim::cost {

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  // Duration in integer nanoseconds (>= 1 for any op with work). Uses op.category, op.flops,
  // op.bytes and, for GEMMs, op.gemm_m/n/k/batch.
  virtual int64_t duration_ns(const workload::Op& op) const = 0;
};

// Roofline with a GPU's achievable-efficiency table (data/efficiency.yaml, resolved by EfficiencyCatalog::resolve):
// max(flops / (peak * eff_compute), bytes / (hbm_bw * eff_memory)) plus a kernel launch floor.
std::unique_ptr<ComputeModel> make_roofline_model(const hw::GpuSpec& gpu, spec::Precision precision,
                                                  const EfficiencyTable& table);

}  // namespace stepsim::cost
