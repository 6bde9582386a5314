#pragma once
// Fitting the compute model's sustained tensor-core clock per GPU architecture, and the scale of its attention
// kernels' efficiency, to measured runs (`stepsim calibrate compute`). Each run is simulated three times (clock 1 and
// 0.5 at attention scale 1, clock 1 at attention scale 0.5); its step time is taken as a + b / k + c / (k s) in the
// clock k and the attention scale s (b: the tensor-core time outside attention kernels, c: inside them, a: the rest),
// and (k, s) minimise the mean absolute log error over the architecture's runs. s is fitted only where attention
// kernels are at least kMinAttentionShare of the runs' predicted time (else 1: nothing in the runs measures it).
// Leave-one-out refits say how well it predicts a run it has not seen.
#include <map>
#include <string>
#include <vector>

#include "stepsim/catalog/prediction_interval.hpp"
#include "stepsim/validate/validation.hpp"

namespace stepsim::validate {

struct RunResponse {
  std::string id, arch;
  double measured = 0;
  double a = 0, b = 0, c = 0;  // predicted step(k, s) = a + b / k + c / (k s)
  std::string kind = "dense";  // hw::kCalibrationKinds
  double at(double k, double s = 1) const { return a + b / k + c / (k * s); }
};

// Attention kernels' share of the runs' predicted time below which the attention scale is not fitted.
constexpr double kMinAttentionShare = 0.05;

struct ClockAndScale {
  double sustained_clock = 1;
  double attention_scale = 1;
};

struct ArchFit {
  std::string arch;
  int runs = 0;
  double sustained_clock = 1;
  double attention_scale = 1;
  bool attention_fitted = false;  // false: attention kernels below kMinAttentionShare of the runs' time, scale 1
  double attention_share = 0;     // of the runs' predicted time at the fitted values
  double mape_before = 0;  // at the clock the runs were simulated with first (the current calibration)
  double mape_after = 0, mean_signed_after = 0;
  double loo_mape = 0;
  double interval_low = 0, interval_high = 0;  // 10th / 90th percentile of the signed errors after the fit
  hw::KindIntervals kind_intervals;             // the band of each kind with runs (kind_intervals() below)
  std::vector<std::pair<std::string, double>> errors;  // per run, after the fit
};

struct ComputeFit {
  std::vector<ArchFit> archs;
  std::vector<FailedRow> failed;
  // Runs of frameworks stepsim costs as Megatron-Core's (framework_costed_as_megatron), not fitted: framework -> ids.
  std::map<std::string, std::vector<std::string>> left_out;
};

// The clock in [0.2, 1.5] (grid of 0.001) and, when `fit_attention`, the attention scale in [0.3, 2.0] (grid of
// 0.01) minimising mean |log(predicted / measured)|; deterministic, ties going to the scale nearest 1.
ClockAndScale fit_clock_and_scale(const std::vector<RunResponse>& runs, bool fit_attention);
// The clock alone (attention scale 1).
double fit_sustained_clock(const std::vector<RunResponse>& runs);

// Simulates every run three times (see above) and fits each architecture; mape_before is at the current
// calibration's clock (data/efficiency.yaml) and attention scale 1. A run of a framework costed as Megatron-Core's
// (DeepSpeed, Composer, JAX) is left out: its engine's own costs would be fitted into the GPU's clock.
ComputeFit fit_compute(const catalog::Catalog& cat, const std::vector<PublishedRun>& runs, const ValidationOptions& o);

// The band of each kind among `errors` (signed, after the fit; kinds[i] is errors[i]'s): a kind with at least
// hw::kMinRunsForKindQuantiles runs gets its own 10th and 90th percentile, one with fewer the architecture's band
// [all_low, all_high] widened to cover each of its errors; a kind without runs gets no entry.
hw::KindIntervals kind_intervals(const std::vector<double>& errors, const std::vector<std::string>& kinds,
                                 double all_low, double all_high);

}  // namespace stepsim::validate
