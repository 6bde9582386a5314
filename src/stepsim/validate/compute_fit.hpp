#pragma once
// Fitting the compute model's sustained tensor-core clock per GPU architecture to measured runs (`stepsim calibrate
// compute`). Each run is simulated at two clocks; its step time is taken as a + b / k in the clock k (exact for
// anything that scales with compute time, which is what the clock changes), and k minimises the mean absolute log
// error over the architecture's runs. Leave-one-out refits say how well it predicts a run it has not seen.
#include <map>
#include <string>
#include <vector>

#include "stepsim/validate/validation.hpp"

namespace stepsim::validate {

struct RunResponse {
  std::string id, arch;
  double measured = 0;
  double a = 0, b = 0;  // predicted step(k) = a + b / k
  double at(double k) const { return a + b / k; }
};

struct ArchFit {
  std::string arch;
  int runs = 0;
  double sustained_clock = 1;
  double mape_before = 0;  // at the clock the runs were simulated with first (the current calibration)
  double mape_after = 0, mean_signed_after = 0;
  double loo_mape = 0;
  double interval_low = 0, interval_high = 0;  // 10th / 90th percentile of the signed errors after the fit
  std::vector<std::pair<std::string, double>> errors;  // per run, after the fit
};

struct ComputeFit {
  std::vector<ArchFit> archs;
  std::vector<FailedRow> failed;
};

// The clock in [0.2, 1.5] minimising mean |log(predicted / measured)| (grid of 0.001, deterministic).
double fit_sustained_clock(const std::vector<RunResponse>& runs);

// Simulates every run at clocks 1.0 and 0.5 and fits each architecture. `baseline` is the clock of the current
// calibration per arch (for mape_before).
ComputeFit fit_compute(const std::vector<PublishedRun>& runs, const ValidationOptions& o);

// q-th quantile (0..1) by linear interpolation of the sorted values.
double quantile(std::vector<double> v, double q);

}  // namespace stepsim::validate
