#include <algorithm>
#include <cmath>

#include "stepsim/catalog/nccl_params.hpp"

namespace stepsim::cost {

void NcclParamTable::add(const NcclParamRow& row) {
  auto key = [](const NcclParamRow& r) { return std::pair(r.nodes, r.chunk_bytes); };
  auto it = std::lower_bound(rows_.begin(), rows_.end(), row, [&](const auto& a, const auto& b) { return key(a) < key(b); });
  if (it != rows_.end() && key(*it) == key(row)) *it = row;  // a later calibration replaces an earlier one
  else rows_.insert(it, row);
}

NcclParams NcclParamTable::lookup(int nodes, uint64_t chunk_bytes) const {
  if (rows_.empty()) return defaults_;
  // Node class: the largest calibrated node count <= nodes, else the smallest.
  int cls = rows_.front().nodes;
  for (const auto& r : rows_) {
    if (r.nodes <= nodes) cls = r.nodes;
  }
  const NcclParamRow* all_sizes = nullptr;
  std::vector<const NcclParamRow*> bands;
  for (const auto& r : rows_) {
    if (r.nodes != cls) continue;
    if (r.chunk_bytes == 0) all_sizes = &r;
    else bands.push_back(&r);  // already ascending in chunk_bytes
  }
  if (bands.empty() || chunk_bytes == 0) return all_sizes ? all_sizes->params : defaults_;
  if (chunk_bytes <= bands.front()->chunk_bytes) return bands.front()->params;
  if (chunk_bytes >= bands.back()->chunk_bytes) return bands.back()->params;
  size_t i = 1;
  while (bands[i]->chunk_bytes < chunk_bytes) ++i;
  const NcclParamRow& lo = *bands[i - 1];
  const NcclParamRow& hi = *bands[i];
  const double w = std::log(static_cast<double>(chunk_bytes) / static_cast<double>(lo.chunk_bytes)) /
                   std::log(static_cast<double>(hi.chunk_bytes) / static_cast<double>(lo.chunk_bytes));
  auto mix = [w](double a, double b) { return a + w * (b - a); };
  // Interpolate times (us) and inverse rates, which is what the linear model adds up.
  NcclParams p;
  p.alpha_us = mix(lo.params.alpha_us, hi.params.alpha_us);
  p.beta_us = mix(lo.params.beta_us, hi.params.beta_us);
  p.gamma_us = mix(lo.params.gamma_us, hi.params.gamma_us);
  p.intra_efficiency = 1.0 / mix(1.0 / lo.params.intra_efficiency, 1.0 / hi.params.intra_efficiency);
  p.inter_efficiency = 1.0 / mix(1.0 / lo.params.inter_efficiency, 1.0 / hi.params.inter_efficiency);
  p.reduce_GBps = 1.0 / mix(1.0 / lo.params.reduce_GBps, 1.0 / hi.params.reduce_GBps);
  return p;
}

}  // namespace stepsim::cost
