#include "stepsim/calibrate/nccl_calibration.hpp"

#include <cmath>
#include <map>
#include <vector>

#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {
namespace {

constexpr const char* kParamNames[kNcclParamCount] = {"alpha_us",         "beta_us",          "gamma_us",
                                                      "intra_efficiency", "inter_efficiency", "reduce_GBps"};

void check_range(double v, double lo, double hi, const char* key, const std::string& where) {
  if (!(std::isfinite(v) && v >= lo && v <= hi)) {
    throw InputError(where + ": " + key + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  }
}

}  // namespace

NcclParams params_of(const hw::CalibrationRow& r, const std::string& where) {
  check_range(r.alpha_us, 0, 1e6, "alpha_us", where);
  check_range(r.beta_us, 0, 1e6, "beta_us", where);
  check_range(r.gamma_us, 0, 1e6, "gamma_us", where);
  check_range(r.intra_efficiency, 1e-3, 1.5, "intra_efficiency", where);
  check_range(r.inter_efficiency, 1e-3, 1.5, "inter_efficiency", where);
  check_range(r.reduce_GBps, 1e-3, 1e6, "reduce_GBps", where);
  NcclParams p;
  p.alpha_us = r.alpha_us;
  p.beta_us = r.beta_us;
  p.gamma_us = r.gamma_us;
  p.intra_efficiency = r.intra_efficiency;
  p.inter_efficiency = r.inter_efficiency;
  p.reduce_GBps = r.reduce_GBps;
  return p;
}

namespace {

// The store's rows the NCCL model uses for `cluster`: per (nodes, chunk_bytes) the row of `nccl_version` when there is
// one, else the newest, among the rows with collective "all" for the cluster's GPU and interconnect.
std::vector<hw::CalibrationRow> chosen_rows(const hw::CalibrationStore& store, const hw::GpuSpec& gpu,
                                            const spec::ClusterSpec& cluster, const std::string& nccl_version) {
  const hw::CalibrationKey key = hw::calibration_key(gpu, cluster);
  auto rank = [&](const hw::CalibrationRow& r) {
    return std::pair(!nccl_version.empty() && r.nccl_version == nccl_version, r.id);
  };
  std::map<std::pair<int, uint64_t>, hw::CalibrationRow> chosen;
  for (hw::CalibrationRow& r : store.query(key.gpu, key.interconnect)) {
    if (r.collective != "all") continue;
    const auto slot = chosen.find({r.nodes, r.chunk_bytes});
    if (slot == chosen.end()) chosen.emplace(std::pair(r.nodes, r.chunk_bytes), std::move(r));
    else if (rank(r) > rank(slot->second)) slot->second = std::move(r);
  }
  std::vector<hw::CalibrationRow> out;
  for (auto& [k, r] : chosen) out.push_back(std::move(r));
  return out;
}

}  // namespace

NcclParamTable calibrated_param_table(const hw::GpuSpec& gpu, const spec::ClusterSpec& cluster,
                                      const NcclProfile& profile, const std::string& store_path,
                                      const std::string& nccl_version) {
  NcclParamTable table(profile.params);
  for (const auto& band : profile.bands) table.add(band);
  const auto store = hw::CalibrationStore::open_existing(store_path);
  if (!store) return table;
  for (const hw::CalibrationRow& r : chosen_rows(*store, gpu, cluster, nccl_version)) {
    NcclParamRow row;
    row.nodes = r.nodes;
    row.chunk_bytes = r.chunk_bytes;
    row.params = params_of(r, store_path + ": row " + std::to_string(r.id));
    table.add(row);
  }
  return table;
}

std::string calibration_note(const hw::GpuSpec& gpu, const spec::ClusterSpec& cluster, const std::string& store_path,
                             const std::string& nccl_version) {
  const auto store = hw::CalibrationStore::open_existing(store_path);
  if (!store) return "";
  const std::vector<hw::CalibrationRow> rows = chosen_rows(*store, gpu, cluster, nccl_version);
  if (rows.empty()) return "";
  std::string ids;
  for (const hw::CalibrationRow& r : rows) ids += (ids.empty() ? "" : ", ") + std::to_string(r.id);
  const hw::CalibrationKey key = hw::calibration_key(gpu, cluster);
  return "NCCL parameters from the calibration store " + store_path + " (row" + (rows.size() > 1 ? "s " : " ") + ids +
         ", fitted for " + key.gpu + " at " + key.interconnect + ") over data/nccl.yaml's; `stepsim calibrate list` " +
         "shows them, store none gives the profile alone";
}

std::string fitted_names(const NcclFit& fit) {
  std::string out;
  for (int j = 0; j < kNcclParamCount; ++j) {
    if (!fit.fitted[j]) continue;
    if (!out.empty()) out += ',';
    out += kParamNames[j];
  }
  return out;
}

hw::CalibrationRow row_of(const NcclFit& fit) {
  hw::CalibrationRow r;
  r.alpha_us = fit.params.alpha_us;
  r.beta_us = fit.params.beta_us;
  r.gamma_us = fit.params.gamma_us;
  r.intra_efficiency = fit.params.intra_efficiency;
  r.inter_efficiency = fit.params.inter_efficiency;
  r.reduce_GBps = fit.params.reduce_GBps;
  r.fitted = fitted_names(fit);
  r.points = fit.points;
  r.mean_abs_error_pct = fit.mean_abs_pct;
  r.max_abs_error_pct = fit.max_abs_pct;
  return r;
}

}  // namespace stepsim::cost
