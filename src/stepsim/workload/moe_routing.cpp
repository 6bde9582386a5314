#include "stepsim/workload/moe_routing.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::workload {
namespace {

// C(n - m, k) / C(n, k): the chance that k distinct draws from n miss a given m of them.
double miss_all(int64_t n, int64_t m, int64_t k) {
  if (k > n - m) return 0.0;
  double p = 1.0;
  for (int64_t i = 0; i < k; ++i) p *= static_cast<double>(n - m - i) / static_cast<double>(n - i);
  return p;
}

// C(K, j) C(N - K, n - j) / C(N, n): j of the n groups drawn out of N lie in a set of K.
double hypergeometric(int64_t N, int64_t K, int64_t n, int64_t j) {
  if (j < 0 || j > K || j > n || n - j > N - K) return 0.0;
  auto log_choose = [](int64_t a, int64_t b) {
    return std::lgamma(static_cast<double>(a) + 1) - std::lgamma(static_cast<double>(b) + 1) -
           std::lgamma(static_cast<double>(a - b) + 1);
  };
  return std::exp(log_choose(K, j) + log_choose(N - K, n - j) - log_choose(N, n));
}

}  // namespace

double expected_blocks_reached(const ExpertRouting& r, int64_t blocks) {
  const int64_t E = r.experts, k = std::min(r.topk, r.experts);
  if (blocks <= 1 || E <= 0 || k <= 0) return blocks >= 1 ? 1.0 : 0.0;
  const int64_t per_block = E / blocks;
  const bool limited = r.groups > 1 && r.group_topk > 0 && r.group_topk < r.groups && E % r.groups == 0;
  double none = miss_all(E, per_block, k);  // no group limit: k experts out of all E
  if (limited) {
    const int64_t per_group = E / r.groups, chosen = r.group_topk * per_group;
    if (r.groups % blocks == 0) {
      // Groups within blocks (DeepSeek-V3: one group per node): j of the block's groups chosen, then the k experts
      // drawn from the chosen groups' experts all miss the block's j groups.
      const int64_t q = r.groups / blocks;
      none = 0;
      for (int64_t j = 0; j <= std::min(q, r.group_topk); ++j)
        none += hypergeometric(r.groups, q, r.group_topk, j) * miss_all(chosen, j * per_group, k);
    } else if (blocks % r.groups == 0) {
      // Blocks within groups: the block's group not chosen, or chosen and its share of the drawn experts missed.
      const double group_chosen = static_cast<double>(r.group_topk) / static_cast<double>(r.groups);
      none = (1 - group_chosen) + group_chosen * miss_all(chosen, per_block, k);
    }
    // Other layouts (groups straddling blocks): the unlimited draw, an upper bound on the places reached.
  }
  return static_cast<double>(blocks) * (1.0 - none);
}

}  // namespace stepsim::workload
