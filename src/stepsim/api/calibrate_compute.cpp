#include "stepsim/api/calibrate_compute.hpp"

#include "stepsim/calibrate/calibration_store.hpp"

namespace stepsim::api {

std::string store_compute_fit(const validate::ComputeFit& fit, const std::string& runs_path, const std::string& store,
                              const std::string& created) {
  const std::string path = store.empty() ? hw::default_calibration_store_path() : store;
  hw::CalibrationStore s = hw::CalibrationStore::open(path);
  for (const auto& a : fit.archs) {
    hw::ComputeCalibrationRow row;
    row.arch = a.arch;
    row.sustained_clock = a.sustained_clock;
    row.attention_scale = a.attention_scale;
    row.runs = a.runs;
    row.mape_pct = 100 * a.mape_after;
    row.loo_mape_pct = 100 * a.loo_mape;
    row.interval_low = a.interval_low;
    row.interval_high = a.interval_high;
    row.kind_intervals = a.kind_intervals;
    row.source = runs_path;
    row.created = created;
    s.insert_compute(row);
  }
  return path;
}

}  // namespace stepsim::api
