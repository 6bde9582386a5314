// GEMM time from tiles and waves: the formula of gemm_waves.hpp, fitted in docs/COST-MODELS.md to 1,100 GEMMs
// measured on an H100 (data/measurements/h100-sxm).
#include "stepsim/catalog/gemm_waves.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stepsim::cost {

double gemm_wave_seconds(const GemmWaves& w, double m, double n, double k, double batch, double peak_flops,
                         int sm_count, double scale, bool grouped) {
  m = std::max(m, 1.0);
  n = std::max(n, 1.0);
  k = std::max(k, 1.0);
  batch = std::max(batch, 1.0);
  const double sms = std::max(sm_count, 1);
  // One SM's share of the tensor-core rate, derated inside the tile's main loop.
  const double sm_rate = peak_flops / sms * w.efficiency * scale;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [tm, tn] : w.tiles) {
    const double tiles = batch * std::ceil(m / tm) * std::ceil(n / tn);
    const double waves = std::ceil(tiles / sms);
    const double per_wave = 2.0 * tm * tn * k / sm_rate + w.wave_overhead_us * 1e-6;
    best = std::min(best, waves * per_wave);
  }
  return best + (w.launch_us + (grouped ? batch * w.group_overhead_us : 0.0)) * 1e-6;
}

}  // namespace stepsim::cost
