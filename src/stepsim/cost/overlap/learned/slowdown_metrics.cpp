#include "stepsim/cost/overlap/learned/slowdown_metrics.hpp"

#include <cmath>
#include <stdexcept>

namespace stepsim::overlap {

SlowdownAccuracy slowdown_accuracy(std::span<const double> measured, std::span<const double> predicted) {
  if (measured.size() != predicted.size()) throw std::logic_error("slowdown_accuracy: lengths differ");
  SlowdownAccuracy a;
  a.rows = measured.size();
  if (a.rows == 0) return a;
  size_t w5 = 0, w10 = 0, w15 = 0;
  double sq = 0;
  for (size_t i = 0; i < a.rows; ++i) {
    const double diff = predicted[i] - measured[i];
    const double rel = std::abs(diff) / (1 + measured[i]);
    w5 += rel <= 0.05 * (1 + 1e-9);
    w10 += rel <= 0.10 * (1 + 1e-9);
    w15 += rel <= 0.15 * (1 + 1e-9);
    sq += diff * diff;
  }
  const double n = static_cast<double>(a.rows);
  a.within_5 = static_cast<double>(w5) / n;
  a.within_10 = static_cast<double>(w10) / n;
  a.within_15 = static_cast<double>(w15) / n;
  a.rmse = std::sqrt(sq / n);
  return a;
}

}  // namespace stepsim::overlap
