#pragma once
// `stepsim calibrate comm`: measurement files -> the NCCL model's parameters fitted per node count, the report, and
// the rows written to the calibration store (docs/CALIBRATION.md). The CLI parses options and prints; this does the rest.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/api/calibrate_comm_input.hpp"

namespace stepsim::api {

struct CalibrateCommOutput {
  std::string text;            // the fit as `calibrate comm` prints it
  nlohmann::json json;         // the same for --json, with "store" and "stored_ids"
  size_t rows = 0;             // store rows the fit makes
  std::string store_path;      // where they went ("" with dry_run)
  std::vector<int64_t> stored_ids;
};

// Reads the inputs, opens the store first (a foreign or corrupt store fails before any work), fits, and stores the
// rows unless o.dry_run; `created` stamps them. InputError naming the file and rule for bad inputs or nothing to fit.
CalibrateCommOutput calibrate_comm(const CalibrateOptions& o, const std::string& created);

}  // namespace stepsim::api
