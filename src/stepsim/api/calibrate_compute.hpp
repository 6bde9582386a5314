#pragma once
// `stepsim calibrate compute`: the compute model's sustained clock and attention-kernel scale fitted per GPU
// architecture to measured runs (validate/compute_fit.hpp), and the rows it writes to the calibration store.
#include <string>

#include "stepsim/validate/compute_fit.hpp"

namespace stepsim::api {

// One compute_calibration row per fitted architecture (clock, attention scale, errors, the prediction band over all
// runs and per kind of job), in the store at `store` ("" = the default store); returns the store's path.
std::string store_compute_fit(const validate::ComputeFit& fit, const std::string& runs_path, const std::string& store,
                              const std::string& created);

}  // namespace stepsim::api
