#include "stepsim/cost/compute/power_limit.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::cost {

double power_limited_clock(double limit_W, double tdp_W, double static_share) {
  if (limit_W <= 0 || tdp_W <= 0 || limit_W >= tdp_W) return 1.0;
  const double dynamic = std::max(limit_W - static_share * tdp_W, 0.0) / ((1 - static_share) * tdp_W);
  return std::cbrt(dynamic);
}

}  // namespace stepsim::cost
