#pragma once
// What `stepsim calibrate` prints: the fit per node count (every point before/after/cross-validated, the parameters,
// the errors) as text and JSON, and the rows of a calibration store.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/api/calibrate_comm_input.hpp"
#include "stepsim/calibrate/nccl_fit.hpp"
#include "stepsim/calibrate/calibration_store.hpp"

namespace stepsim::api {

std::string calibration_text(const CalibrationInput& in, const cost::NcclProfile& profile,
                             const cost::NcclCalibrationResult& r);
nlohmann::json calibration_json(const CalibrationInput& in, const cost::NcclProfile& profile,
                                const cost::NcclCalibrationResult& r);
// One line per row; parameters that were not fitted carry a '*'.
std::string store_listing(const std::string& path, const std::vector<hw::CalibrationRow>& rows);
// `stepsim calibrate list`: the listing of the store at `store` ("" = the default store), or a line saying it holds no
// calibrations yet (a store that does not exist is not created).
std::string calibration_list(const std::string& store);
// `stepsim calibrate remove`: deletes the NCCL rows `ids` and the compute calibrations of `archs` from the store at
// `store` ("" = the default); what was removed, or InputError (a store that does not exist, an id it does not hold).
std::string calibration_remove(const std::string& store, const std::vector<int64_t>& ids,
                               const std::vector<std::string>& archs);

}  // namespace stepsim::api
