#include "stepsim/plan/plan_ties.hpp"

#include <algorithm>
#include <tuple>

#include "stepsim/plan/planner.hpp"

namespace stepsim::plan {

int layout_complexity(const Plan& p) {
  return (p.tensor > 1) + (p.pipeline > 1) + (p.context > 1) + (p.expert > 1) + (p.virtual_stages > 1) +
         (p.recompute != spec::Recompute::None) + (p.zero_stage >= 2) + p.tp_comm_overlap + p.ep_overlap +
         (p.expert_tensor > 0 && p.expert_tensor != p.tensor);
}

void group_ties(std::vector<RankedPlan>& plans, double tolerance, int64_t capacity_bytes) {
  const double step = std::max(1.0, kHeadroomStep * static_cast<double>(capacity_bytes));
  auto headroom_class = [&](const RankedPlan& p) {
    return static_cast<int64_t>(static_cast<double>(p.peak_memory_bytes) / step);
  };
  size_t start = 0;
  int group = 0;
  while (start < plans.size()) {
    const RankedPlan& first = plans[start];
    size_t end = start + 1;
    if (tolerance > 0) {
      while (end < plans.size() && plans[end].memory_at_risk == first.memory_at_risk &&
             plans[end].objective_s <= first.objective_s * (1 + tolerance)) {
        ++end;
      }
    }
    ++group;
    for (size_t i = start; i < end; ++i) plans[i].tie_group = group;
    const auto first_it = plans.begin() + static_cast<std::ptrdiff_t>(start);
    std::stable_sort(first_it, first_it + static_cast<std::ptrdiff_t>(end - start),
                     [&](const RankedPlan& a, const RankedPlan& b) {
                       return std::tuple(layout_complexity(a.plan), headroom_class(a), a.objective_s) <
                              std::tuple(layout_complexity(b.plan), headroom_class(b), b.objective_s);
                     });
    start = end;
  }
}

std::string tie_rule_text() {
  return "the simpler layout first (fewer of TP, PP, CP, EP, interleaving, recompute, ZeRO-2/3, TP overlap, "
         "EP overlap, expert-TP folding), then more memory headroom (in steps of 10 % of the GPU's memory), then the objective";
}

}  // namespace stepsim::plan
