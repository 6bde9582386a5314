#pragma once
// Accuracy of slowdown predictions in Echo Table 6's terms. "Within X%": the predicted slowdown factor (1 + s')
// is within X% of the measured one (1 + s), |s' - s| / (1 + s) <= X/100 (a relative tolerance of 1e-9 absorbs
// rounding at the boundary). RMSE: root mean square of s' - s (equal to the RMSE of the factors).
#include <cstddef>
#include <span>

namespace stepsim::overlap {

struct SlowdownAccuracy {
  size_t rows = 0;
  double within_5 = 0, within_10 = 0, within_15 = 0;  // shares, 0..1
  double rmse = 0;
};

// measured and predicted have the same length; every measured s > -1. Zero rows give all zeros.
SlowdownAccuracy slowdown_accuracy(std::span<const double> measured, std::span<const double> predicted);

}  // namespace stepsim::overlap
