#include "stepsim/plan/reliability_monte_carlo.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "stepsim/io/input_error.hpp"

namespace stepsim::plan {

namespace {

// One training run on a wall clock. Poisson arrivals are memoryless, so the time to the next failure is
// carried across phases and redrawn only after it is used, and whole failure-free segments are skipped in
// one addition: the cost of a run is its number of failures, not its number of segments.
class Run {
 public:
  Run(const ReliabilityInputs& in, std::mt19937_64& rng, int64_t& failure_budget)
      : in_(in), rng_(rng), budget_(failure_budget), lambda_(failure_rate_per_s(in)) {
    double total = 0;
    for (const auto& l : in.recovery) total += l.probability;
    double cum = 0;
    for (const auto& l : in.recovery) {
      cum += l.probability / total;
      cumulative_.push_back(cum);
    }
  }

  double simulate(int64_t interval_steps) {
    gap_ = next_gap();
    if (in_.init_time_s > 0) run_phases(in_.init_time_s, 1);
    const int64_t full = in_.steps / interval_steps, rest = in_.steps % interval_steps;
    run_phases(static_cast<double>(interval_steps) * in_.step_time_s + in_.save_time_s, full);
    if (rest > 0) run_phases(static_cast<double>(rest) * in_.step_time_s + in_.save_time_s, 1);
    return t_;
  }
  int64_t failures() const { return failures_; }

 private:
  // Uniform on (0, 1] from the top 53 bits: never 0, so the logarithm below is finite.
  double uniform() { return (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53; }
  double next_gap() { return -std::log(uniform()) / lambda_; }

  double draw_recovery_s() {
    const double u = uniform();
    for (size_t k = 0; k + 1 < cumulative_.size(); ++k) {
      if (u <= cumulative_[k]) return in_.recovery[k].time_s;
    }
    return in_.recovery.back().time_s;  // also catches a last cumulative share rounded below 1
  }

  void fail() {
    t_ += gap_;
    ++failures_;
    if (--budget_ < 0) {
      throw InputError("Monte Carlo: more than " + std::to_string(kMaxMonteCarloFailures) +
                       " failures drawn; use fewer runs (--monte-carlo) or a case where failures are rarer");
    }
  }

  // `count` phases of `length_s` each, every one lost and repeated when a failure hits it.
  void run_phases(double length_s, int64_t count) {
    while (count > 0) {
      if (gap_ >= length_s) {
        const double fit = std::min(std::floor(gap_ / length_s), static_cast<double>(count));
        t_ += fit * length_s;
        gap_ = std::max(0.0, gap_ - fit * length_s);
        count -= static_cast<int64_t>(fit);
        continue;
      }
      fail();
      recover();
    }
  }

  void recover() {
    for (;;) {
      const double repair_s = draw_recovery_s();
      gap_ = next_gap();
      if (gap_ >= repair_s) {
        t_ += repair_s;
        gap_ -= repair_s;
        return;
      }
      fail();
    }
  }

  const ReliabilityInputs& in_;
  std::mt19937_64& rng_;
  int64_t& budget_;
  double lambda_;
  std::vector<double> cumulative_;
  double t_ = 0, gap_ = 0;
  int64_t failures_ = 0;
};

// Nearest-rank percentile of sorted values: the ceil(pct/100 * n)-th smallest, in integers so that no
// rounding moves it.
double percentile(const std::vector<double>& sorted, int pct) {
  const int64_t n = static_cast<int64_t>(sorted.size());
  const int64_t rank = std::max<int64_t>(1, (pct * n + 99) / 100);
  return sorted[static_cast<size_t>(rank - 1)];
}

}  // namespace

MonteCarloResult simulate_runs(const ReliabilityInputs& in, int64_t interval_steps, int64_t runs, uint64_t seed) {
  if (runs < 1) throw InputError("Monte Carlo: needs at least 1 run, got " + std::to_string(runs));
  std::mt19937_64 rng(seed);
  int64_t budget = kMaxMonteCarloFailures;
  std::vector<double> times;
  times.reserve(static_cast<size_t>(runs));
  double failures = 0;
  for (int64_t r = 0; r < runs; ++r) {
    Run run(in, rng, budget);
    times.push_back(run.simulate(interval_steps));
    failures += static_cast<double>(run.failures());
  }
  MonteCarloResult m;
  m.runs = runs;
  m.seed = seed;
  double sum = 0;
  for (double t : times) sum += t;
  m.mean_s = sum / static_cast<double>(runs);
  double ss = 0;
  for (double t : times) ss += (t - m.mean_s) * (t - m.mean_s);
  m.std_error_s = runs > 1 ? std::sqrt(ss / static_cast<double>(runs - 1) / static_cast<double>(runs)) : 0.0;
  m.mean_failures = failures / static_cast<double>(runs);
  std::sort(times.begin(), times.end());
  m.p50_s = percentile(times, 50);
  m.p95_s = percentile(times, 95);
  m.p99_s = percentile(times, 99);
  m.min_s = times.front();
  m.max_s = times.back();
  return m;
}

}  // namespace stepsim::plan
