#pragma once
// Between the calibration store (hw/calibration_store.hpp) and the NCCL model: stored rows become NcclParamTable
// rows, fits become stored rows.
#include <string>
#include <vector>

#include "stepsim/calibrate/nccl_fit.hpp"
#include "stepsim/catalog/nccl_params.hpp"
#include "stepsim/calibrate/calibration_store.hpp"

namespace stepsim::cost {

// The parameter table the NCCL model should use for `cluster`: the profile's defaults and shipped bands, overlaid
// by the store's rows for the cluster's GPU and interconnect (calibration_key) with collective "all" — for each
// (nodes, chunk_bytes) the row of `nccl_version` when there is one, else the newest. No store file at `store_path`:
// the profile's table alone. InputError naming the store for a corrupt or foreign file or an out-of-range row.
NcclParamTable calibrated_param_table(const hw::GpuSpec& gpu, const spec::ClusterSpec& cluster,
                                      const NcclProfile& profile, const std::string& store_path,
                                      const std::string& nccl_version = "");

// What a user should be told when the store changes the NCCL model's parameters for `cluster` (which store, which
// rows, for which key); "" when the store holds none for it (or does not exist).
std::string calibration_note(const hw::GpuSpec& gpu, const spec::ClusterSpec& cluster, const std::string& store_path,
                             const std::string& nccl_version = "");

// A stored row's parameters; InputError naming `where` when a value is outside the ranges data/nccl.yaml accepts.
NcclParams params_of(const hw::CalibrationRow& row, const std::string& where);

// "alpha_us,beta_us,..." for the fitted flags of a fit (the store's `fitted` column).
std::string fitted_names(const NcclFit& fit);
// The store row of a fit; the caller fills key, version, source and created.
hw::CalibrationRow row_of(const NcclFit& fit);

}  // namespace stepsim::cost
