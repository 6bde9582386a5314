#pragma once
// Step-time prediction intervals by kind of job (issue 13 item 4). A calibration (`stepsim calibrate compute`, or the
// shipped data/efficiency.yaml) fits one sustained clock per GPU architecture to measured runs; the runs' signed
// errors (predicted - measured) / measured then say how far to trust a prediction. Dense and MoE runs err
// differently (MoE steps hold work the model times less well: routing, permutation, host synchronisation, the
// all-to-all), so each kind gets the band of its own runs, and a job is given the band of its kind.
#include <array>
#include <map>
#include <string>

namespace stepsim::hw {

struct KindInterval {
  double low = 0, high = 0;  // signed fractions
  int runs = 0;              // calibration runs of this kind behind the band
  double power_limit_W = 0;  // the power limit those runs ran at; 0: the board's default
};

// Kinds a calibration tells apart: a model with routed experts is "moe", any other "dense".
inline constexpr std::array<const char*, 2> kCalibrationKinds = {"dense", "moe"};

using KindIntervals = std::map<std::string, KindInterval>;

// The errors of every development run with each source weighted equally (10th and 90th percentile, `stepsim validate`
// over the development files): a run from a source never seen errs by its source's offset as well as its own
// scatter, which the bands of the calibration's own sources do not hold. A job on the shipped calibration gets at
// least this band.
struct NewSourceInterval {
  double low = 0, high = 0;
  int sources = 0, runs = 0;
};

// Runs of one kind from which the band is their own 10th and 90th percentile; with fewer (but at least one) the
// band is the architecture's over all runs, widened to cover each of the kind's errors, since a percentile of one
// to four values says little.
inline constexpr int kMinRunsForKindQuantiles = 5;

}  // namespace stepsim::hw
