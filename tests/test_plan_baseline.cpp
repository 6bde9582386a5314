// The job as written beside the ranked plans (issue 46 item 3): timed as the best plans are, its gain against plan #1
// read off the two steps, and a layout that does not run on the planned GPUs said instead of guessed.
#include <string>

#include <gtest/gtest.h>

#include <algorithm>

#include "stepsim/api/plan.hpp"
#include "stepsim/api/simulate.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

api::PlanOutput plan_of(const std::string& yaml, int gpus, int simulate) {
  api::PlanOptions o;
  o.job.job_text = yaml;
  o.gpus = gpus;
  o.simulate = simulate;
  o.top = 3;
  o.threads = 2;
  return api::plan(o);
}

TEST(PlanBaseline, TheJobAsWrittenIsTimedAsTheBestPlansAre) {
  const std::string yaml = test::small_gpt_yaml(2, 1, 4, 32);
  const api::PlanOutput out = plan_of(yaml, 0, 1);
  ASSERT_TRUE(out.result.baseline.has_value());
  const plan::RankedPlan& b = *out.result.baseline;
  EXPECT_TRUE(b.simulated);
  EXPECT_EQ(b.plan.tensor, 2);
  EXPECT_EQ(b.plan.data, 4);
  // The engine's step of the job itself, as `stepsim simulate` gives it.
  api::SimulateOptions so;
  so.job.job_text = yaml;
  EXPECT_EQ(b.step_time_s, api::simulate(so).summary.step_time_s);
  // Against the fastest ranked plan (ties may put a simpler one first).
  double best = out.result.plans.front().step_time_s;
  for (const auto& p : out.result.plans) best = std::min(best, p.step_time_s);
  EXPECT_DOUBLE_EQ(out.json["baseline"]["longer_than_best"].get<double>(), b.step_time_s / best - 1);
  EXPECT_EQ(out.json["baseline"]["tensor"], 2);
  const std::string text = api::plan_text(out);
  EXPECT_NE(text.find("\n  job   2   1     4"), std::string::npos) << text;
  EXPECT_NE(text.find("job: the job as written (TP 2 PP 1 DP 4"), std::string::npos) << text;
}

TEST(PlanBaseline, OtherGpusKeepTheLayoutAndRederiveTheDataDegree) {
  const api::PlanOutput out = plan_of(test::small_gpt_yaml(2, 1, 4, 32), 16, 0);
  ASSERT_TRUE(out.result.baseline.has_value());
  EXPECT_EQ(out.result.baseline->plan.data, 8);
  EXPECT_FALSE(out.result.baseline->simulated);  // --simulate 0: estimated, as the plans are
  EXPECT_EQ(out.result.baseline_note, "estimated (--simulate 0)");
  // TP 2 x PP 8 = 16 does not divide 24 GPUs.
  const api::PlanOutput none = plan_of(test::small_gpt_yaml(2, 8, 1, 32), 24, 0);
  ASSERT_FALSE(none.result.baseline.has_value());
  EXPECT_EQ(none.result.baseline_note, "the job as written (TP x CP x PP = 16) does not divide 24 GPUs");
  const api::PlanOutput batch = plan_of(test::small_gpt_yaml(1, 1, 8, 32), 64, 0);
  ASSERT_FALSE(batch.result.baseline.has_value());  // DP 64 does not divide a global batch of 32
  EXPECT_NE(batch.result.baseline_note.find("does not run on these GPUs and batch"), std::string::npos)
      << batch.result.baseline_note;
  EXPECT_TRUE(batch.json["baseline"].is_null());
}

}  // namespace
}  // namespace stepsim
