#include "stepsim/profile/clock_sync.hpp"

#include <algorithm>

namespace stepsim::profile {
namespace {

// Lower median for an even count: an observed value, no rounding of the mean of two.
int64_t median(std::vector<int64_t> v) {
  const size_t mid = (v.size() - 1) / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

}  // namespace

std::map<int, int64_t> clock_offsets(const std::vector<CollectiveInstance>& instances) {
  std::map<int, std::vector<int64_t>> deltas;
  std::vector<int64_t> starts;
  for (const auto& inst : instances) {
    if (inst.size() < 2) continue;
    starts.clear();
    for (const auto& [rank, t] : inst) starts.push_back(t);
    const int64_t ref = median(starts);
    for (const auto& [rank, t] : inst) deltas[rank].push_back(ref - t);
  }
  std::map<int, int64_t> out;
  for (auto& [rank, d] : deltas) out[rank] = median(d);
  if (!out.empty()) {
    const int64_t base = out.begin()->second;  // the lowest rank is the reference (rank 0 when present)
    for (auto& [rank, off] : out) off -= base;
  }
  return out;
}

}  // namespace stepsim::profile
