#pragma once
// `stepsim calibrate compute` as a library call (the CLI's cmd_calibrate_compute.cpp): the compute model's sustained
// clock and attention-kernel scale fitted per GPU architecture to measured runs (validate/compute_fit.hpp), the table
// and JSON of the fit, and the rows written to the calibration store (docs/CALIBRATION.md, "Compute").
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/validate/compute_fit.hpp"

namespace stepsim::api {

struct CalibrateComputeOptions {
  std::string runs;                    // published-runs CSV
  std::string store;                   // "" = the default store
  std::vector<std::string> exclude;    // run ids left out of the fit
  std::vector<std::string> overrides;  // key=value applied to every run's job
  bool dry_run = false;                // fit, store nothing
};

struct CalibrateComputeOutput {
  validate::ComputeFit fit;
  std::string text;        // the fit as `calibrate compute` prints it: one line per architecture, runs not used
  nlohmann::json json;     // what --json writes: {"archs": [...]}
  std::string store_path;  // where the rows went; "" when nothing was stored (dry run, or no architecture fitted)
};

// Reads and fits the runs; stores one row per fitted architecture unless o.dry_run, stamped `created`.
CalibrateComputeOutput calibrate_compute(const CalibrateComputeOptions& o, const std::string& created);

}  // namespace stepsim::api
