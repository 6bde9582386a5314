#include "stepsim/workload/dp_buckets.hpp"

#include <algorithm>
#include <limits>

namespace stepsim::workload {

double dp_bucket_limit(const spec::TrainingSpec& t, int64_t dp) {
  if (!t.overlap_grad_reduce) return std::numeric_limits<double>::infinity();
  if (t.bucket_size > 0) return static_cast<double>(t.bucket_size);
  return std::max(40e6, 1e6 * static_cast<double>(dp));
}

std::vector<DpBucketSpan> form_dp_buckets(const std::vector<UnitParams>& units, double limit) {
  std::vector<DpBucketSpan> out;
  DpBucketSpan open[2] = {{false, 0, 0}, {true, 0, 0}};
  for (size_t u = 0; u < units.size(); ++u) {
    const double params[2] = {units[u].dense, units[u].expert};
    for (int k = 0; k < 2; ++k) {
      if (params[k] <= 0) continue;
      open[k].params += params[k];
      open[k].last = u;
      if (open[k].params >= limit) {
        out.push_back(open[k]);
        open[k].params = 0;
      }
    }
  }
  for (const DpBucketSpan& b : open) {
    if (b.params > 0) out.push_back(b);
  }
  return out;
}

}  // namespace stepsim::workload
