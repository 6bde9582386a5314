#pragma once
// Monte-Carlo simulation of a whole training run with failures and checkpoints, to check the closed form of
// reliability.hpp and to give the spread of the run time (docs/RELIABILITY.md, "Monte Carlo").
//
// One run: start-up (u_0), then ceil(S / I) segments of I steps each followed by a checkpoint save (the last
// segment holds the remaining steps). Failures of all nodes arrive as one Poisson process of rate N r_f over
// the whole wall time. A failure discards the segment in progress (work since the last completed checkpoint,
// including a save in progress) and starts a recovery whose level is drawn by the level probabilities; a
// failure during a recovery starts a new recovery. A failure during start-up repeats the start-up.
#include <cstdint>
#include <vector>

#include "stepsim/plan/reliability.hpp"

namespace stepsim::plan {

struct MonteCarloResult {
  int64_t runs = 0;
  uint64_t seed = 0;
  double mean_s = 0;
  double std_error_s = 0;  // standard deviation of the runs / sqrt(runs)
  double p50_s = 0, p95_s = 0, p99_s = 0;  // nearest rank: the ceil(p * runs)-th shortest run
  double min_s = 0, max_s = 0;
  double mean_failures = 0;
};

// Refuses (InputError) a simulation that would draw more than this many failures in all.
constexpr int64_t kMaxMonteCarloFailures = 100'000'000;

// `runs` runs from one std::mt19937_64 seeded with `seed`; the same inputs and seed give bit-identical
// results (the uniform and exponential variates are computed here, not by the library's distributions,
// whose algorithms differ between standard libraries).
MonteCarloResult simulate_runs(const ReliabilityInputs& in, int64_t interval_steps, int64_t runs, uint64_t seed);

}  // namespace stepsim::plan
