// Rankings that respect the model's own error (issue 46 item 3): plans within the plan-to-plan error of their group's
// first form a tie group ordered by the simpler layout, then memory headroom; the default tolerance is the median
// difference between the errors of two layouts of one job over the development runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/plan/planner.hpp"
#include "stepsim/validate/validation.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace plan_ties_test {

plan::RankedPlan ranked(double objective, int tensor = 1, int64_t peak = 10, bool risk = false) {
  plan::RankedPlan r;
  r.objective_s = objective;
  r.plan.tensor = tensor;
  r.peak_memory_bytes = peak;
  r.memory_at_risk = risk;
  return r;
}

TEST(PlanTies, GroupsStartAtAPlanAndTakeThoseWithinTheTolerance) {
  // 1.00 and 1.03 tie (1.03 <= 1.05); 1.06 starts a group of its own; 1.20 and 1.21 tie.
  std::vector<plan::RankedPlan> p = {ranked(1.00, 2), ranked(1.03, 1), ranked(1.06), ranked(1.20), ranked(1.21)};
  plan::group_ties(p, 0.05, 100);
  std::vector<int> groups;
  for (const auto& r : p) groups.push_back(r.tie_group);
  EXPECT_EQ(groups, (std::vector<int>{1, 1, 2, 3, 3}));
  // Within the first group the plan without TP goes first although it is 3 % slower.
  EXPECT_DOUBLE_EQ(p[0].objective_s, 1.03);
  EXPECT_EQ(p[1].plan.tensor, 2);
}

TEST(PlanTies, EqualLayoutsOrderByHeadroomThenObjectiveAndRiskNeverJoins) {
  std::vector<plan::RankedPlan> p = {ranked(1.00, 1, 60), ranked(1.01, 1, 40), ranked(1.02, 1, 40),
                                     ranked(1.03, 1, 5, true)};
  plan::group_ties(p, 0.05, 100);
  EXPECT_DOUBLE_EQ(p[0].objective_s, 1.01);  // 40 bytes, then the faster of the two
  EXPECT_DOUBLE_EQ(p[1].objective_s, 1.02);
  EXPECT_DOUBLE_EQ(p[2].objective_s, 1.00);
  EXPECT_EQ(p[3].tie_group, 2);  // at memory risk: after the others, in a group of its own
}

TEST(PlanTies, ZeroToleranceKeepsTheObjectiveOrder) {
  std::vector<plan::RankedPlan> p = {ranked(1.00, 4), ranked(1.00, 1), ranked(1.001)};
  plan::group_ties(p, 0, 100);
  EXPECT_EQ(p[0].plan.tensor, 4);
  EXPECT_EQ(p[2].tie_group, 3);
}

TEST(PlanTies, LayoutComplexityCountsWhatAPlanTurnsOn) {
  plan::Plan x;
  EXPECT_EQ(plan::layout_complexity(x), 0);
  x.tensor = 2;
  x.tp_comm_overlap = true;
  x.pipeline = 4;
  x.virtual_stages = 2;
  x.recompute = spec::Recompute::Selective;
  x.zero_stage = 1;  // the distributed optimizer is not a layout
  EXPECT_EQ(plan::layout_complexity(x), 5);
}

// The default tolerance is recomputed from the development runs: pairs of rows of one model, GPU, GPU count,
// sequence, batch and precision whose layouts differ; the median of |error_a - error_b|.
TEST(PlanTies, TheDefaultToleranceIsThePlanToPlanErrorOfTheDevelopmentRuns) {
  const auto cat = catalog::shipped();
  std::vector<double> diffs;
  for (const std::string& file : {std::string(STEPSIM_SHARED_DIR) + "/data/published-runs/published_runs.csv",
                                 std::string(STEPSIM_SHARED_DIR) + "/data/published-runs/published_runs_2.csv",
                                 std::string(STEPSIM_SHARED_DIR) + "/data/published-runs/published_runs_blackwell.csv",
                                 test::source_dir() + "/bench/validation/nvidia-h100-benchmarks.csv"}) {
    const auto runs = validate::read_published_runs(file);
    using Key = std::tuple<std::string, std::string, int, int64_t, int64_t, std::string, std::string, int, int64_t>;
    std::map<Key, std::vector<const validate::PublishedRun*>> groups;
    for (const auto& r : runs) {
      groups[{r.model, r.gpu, r.num_gpus, r.seq_len, r.global_batch, r.precision, r.framework, r.layers, r.hidden}]
          .push_back(&r);
    }
    auto layout = [](const validate::PublishedRun* r) {
      return std::tuple(r->tp, r->pp, r->cp, r->ep, r->vp.value_or(0), r->micro_batch.value_or(0), r->recompute);
    };
    validate::ValidationOptions o;
    std::vector<std::vector<std::string>> paired;
    for (const auto& entry : groups) {
      const auto& rows = entry.second;  // (a structured binding cannot be captured before C++20 in clang)
      std::vector<std::string> ids;
      for (const auto* r : rows) ids.push_back(r->id);
      const bool differ = std::any_of(rows.begin(), rows.end(), [&](auto* r) { return layout(r) != layout(rows[0]); });
      if (rows.size() < 2 || !differ) continue;
      paired.push_back(ids);
      o.only_ids.insert(o.only_ids.end(), ids.begin(), ids.end());
    }
    if (o.only_ids.empty()) continue;
    const validate::ValidationResult res = validate::validate_runs(cat, runs, o);
    std::map<std::string, double> error;
    for (const auto& row : res.rows) error[row.id] = row.error;
    std::map<std::string, const validate::PublishedRun*> by_id;
    for (const auto& r : runs) by_id[r.id] = &r;
    for (const auto& ids : paired) {
      for (size_t a = 0; a < ids.size(); ++a) {
        for (size_t b = a + 1; b < ids.size(); ++b) {
          if (layout(by_id[ids[a]]) == layout(by_id[ids[b]]) || !error.count(ids[a]) || !error.count(ids[b])) continue;
          diffs.push_back(std::abs(error[ids[a]] - error[ids[b]]));
        }
      }
    }
  }
  std::sort(diffs.begin(), diffs.end());
  ASSERT_EQ(diffs.size(), 22u);
  const double median = (diffs[10] + diffs[11]) / 2;
  EXPECT_NEAR(plan::kDefaultTieTolerance, median, 0.0005);
}

TEST(PlanTies, ThePlanCommandSaysWhichPlansTieAndTakesTheTolerance) {
  auto r = test::run_cli("plan " + test::source_dir() + "/examples/llama2-7b-8.yaml --top 5 --simulate 0");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ties (plans within 6.5 % of their group's first): #1-#5"), std::string::npos) << r.output;
  r = test::run_cli("plan " + test::source_dir() + "/examples/llama2-7b-8.yaml --top 5 --simulate 0 --tie-tolerance 0");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ties: not grouped (--tie-tolerance 0)"), std::string::npos) << r.output;
  r = test::run_cli("plan " + test::source_dir() + "/examples/llama2-7b-8.yaml --tie-tolerance 0.7");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--tie-tolerance"), std::string::npos) << r.output;
}

}  // namespace plan_ties_test
}  // namespace stepsim
