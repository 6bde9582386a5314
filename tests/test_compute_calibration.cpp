// Compute-model calibration (issue 13 items 2-4): the sustained-clock fit on runs whose response is known in closed
// form, the residual band, the store round trip, and a simulation that uses the stored clock and reports its
// step-time interval.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "stepsim/hw/calibration_store.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/sim/simulation.hpp"
#include "stepsim/validate/compute_fit.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

using validate::RunResponse;

TEST(ComputeCalibration, FitRecoversTheClockOfRunsThatScaleWithCompute) {
  // Three runs of pure compute (a = 0) measured 1/0.8 slower than predicted at clock 1: the fit is 0.8 exactly.
  const std::vector<RunResponse> runs = {
      {"r1", "hopper", 1.0 / 0.8, 0.0, 1.0}, {"r3", "hopper", 3.0 / 0.8, 0.0, 3.0}, {"r10", "hopper", 10.0 / 0.8, 0.0, 10.0}};
  EXPECT_NEAR(validate::fit_sustained_clock(runs), 0.8, 1e-9);
  // A run with a fixed part: step(k) = 2 + 1/k, measured 4.5 -> k = 0.4.
  EXPECT_NEAR(validate::fit_sustained_clock({{"x", "ampere", 4.5, 2.0, 1.0}}), 0.4, 1e-9);
}

TEST(ComputeCalibration, FitIsTheMedianInLogSpace) {
  // Mean |log error| is minimised at the median of the runs' own clocks (0.5, 0.7, 0.9 -> 0.7).
  const std::vector<RunResponse> runs = {
      {"k5", "ampere", 1.0 / 0.5, 0.0, 1.0}, {"k9", "ampere", 1.0 / 0.9, 0.0, 1.0}, {"k7", "ampere", 1.0 / 0.7, 0.0, 1.0}};
  EXPECT_NEAR(validate::fit_sustained_clock(runs), 0.7, 1e-9);
}

TEST(ComputeCalibration, QuantilesInterpolate) {
  EXPECT_DOUBLE_EQ(validate::quantile({-0.2, 0.0, 0.1, 0.3, -0.1}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(validate::quantile({0.0, 1.0}, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(validate::quantile({}, 0.9), 0.0);
}

TEST(ComputeCalibration, SimulationUsesTheStoredClockAndReportsItsInterval) {
  const std::string store = test::temp_dir() + "/compute.sqlite";
  std::filesystem::remove(store);
  {
    hw::CalibrationStore s = hw::CalibrationStore::open(store);
    hw::ComputeCalibrationRow row;
    row.arch = "hopper";
    row.sustained_clock = 0.5;
    row.runs = 3;
    row.interval_low = -0.1;
    row.interval_high = 0.25;
    row.source = "test";
    row.created = "2026-11-25T00:00:00Z";
    s.insert_compute(row);
    row.sustained_clock = 0.6;  // newer row wins
    s.insert_compute(row);
  }
  std::string yaml = test::small_gpt_yaml(1, 1, 1, 4);
  const spec::JobSpec at1 = test::job_from_yaml(yaml + "simulation: {calibration_store: none, sustained_clock: 1.0}\n");
  const spec::JobSpec stored = test::job_from_yaml(yaml + "simulation: {calibration_store: " + store + "}\n");
  sim::ComputeCalibration cal;
  sim::make_compute_model(stored, &cal);
  EXPECT_DOUBLE_EQ(cal.sustained_clock, 0.6);
  EXPECT_EQ(cal.source, "store " + store);
  const sim::Simulation a = sim::run_simulation(at1, {0});
  const sim::Simulation b = sim::run_simulation(stored, {0});
  EXPECT_GT(b.result.step_ns, a.result.step_ns);  // a slower clock, a longer step
  const report::Summary sa = report::summarize(a, 0), sb = report::summarize(b, 0);
  EXPECT_FALSE(sa.step_time_interval_s.has_value());  // a clock the user chose has no residuals
  ASSERT_TRUE(sb.step_time_interval_s.has_value());
  // measured = predicted / (1 + error): [T / 1.25, T / 0.9].
  EXPECT_DOUBLE_EQ((*sb.step_time_interval_s)[0], sb.step_time_s / 1.25);
  EXPECT_DOUBLE_EQ((*sb.step_time_interval_s)[1], sb.step_time_s / 0.9);
  const auto j = report::to_json(sb, stored);
  EXPECT_EQ(j["step_time_interval_s"].size(), 2u);
}

}  // namespace
}  // namespace stepsim
