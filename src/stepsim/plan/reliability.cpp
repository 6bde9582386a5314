#include "stepsim/plan/reliability.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/model_dims.hpp"
#include "stepsim/workload/static_memory.hpp"

namespace stepsim::plan {

std::vector<RecoveryLevel> mofa_recovery_levels() {
  return {{"process", 0.3, 141.0}, {"pod", 0.6, 262.0}, {"job", 0.1, 307.0}};
}

double mean_time_to_repair(const std::vector<RecoveryLevel>& levels) {
  double u = 0;
  for (const auto& l : levels) u += l.probability * l.time_s;
  return u;
}

int checkpoint_bytes_per_param(const spec::TrainingSpec& training) {
  const workload::BytesPerParam b = workload::bytes_per_param(training);
  // Model weights + master weights and Adam moments (the step's fp32 gradient copy is not state).
  return b.weight + b.optimizer;
}

double checkpoint_bytes(const spec::JobSpec& job) {
  return static_cast<double>(workload::total_parameters(job.model)) * checkpoint_bytes_per_param(job.training);
}

double checkpoint_save_time_s(double bytes, double storage_bytes_per_s) { return bytes / storage_bytes_per_s; }

double failure_rate_per_s(const ReliabilityInputs& in) {
  return static_cast<double>(in.nodes) * in.failures_per_node_day / kSecondsPerDay;
}

double failure_load(const ReliabilityInputs& in, int64_t interval_steps) {
  const double interval_s = static_cast<double>(interval_steps) * in.step_time_s;
  return failure_rate_per_s(in) * (mean_time_to_repair(in.recovery) + interval_s / 2.0);
}

namespace {

// 1 - failure_load, refusing a run that never finishes (callers name the flags; this is the last guard).
double progress_share(const ReliabilityInputs& in, int64_t interval_steps) {
  const double load = failure_load(in, interval_steps);
  if (!(load < 1.0)) {
    throw InputError("failures cost " + std::to_string(load) +
                     " of every second (N r_f (u_b + I T_step / 2) must be below 1): the run never finishes");
  }
  return 1.0 - load;
}

}  // namespace

double e2e_objective_per_step_s(const ReliabilityInputs& in, int64_t interval_steps) {
  const double interval_s = static_cast<double>(interval_steps) * in.step_time_s;
  return in.step_time_s * (1.0 + in.save_time_s / interval_s) / progress_share(in, interval_steps);
}

double expected_ettr(const ReliabilityInputs& in, int64_t interval_steps) {
  return in.step_time_s / e2e_objective_per_step_s(in, interval_steps);
}

double continuous_optimal_interval(const ReliabilityInputs& in) {
  const double lambda = failure_rate_per_s(in);
  const double ub = mean_time_to_repair(in.recovery);
  const double ts = in.save_time_s;
  if (!(lambda * ub < 1.0)) {
    throw InputError("a failure arrives every " + std::to_string(1.0 / lambda) + " s but repair takes " +
                     std::to_string(ub) + " s (N r_f u_b must be below 1): the run never finishes");
  }
  // Eq. 44 written as -T_save + sqrt(T_save^2 + 2 T_save (1 - lambda u_b) / lambda): the same value, and the
  // radicand cannot cancel to a negative number when lambda u_b < 1.
  const double interval_s = -ts + std::sqrt(ts * ts + 2.0 * ts * (1.0 - lambda * ub) / lambda);
  return interval_s / in.step_time_s;
}

int64_t optimal_interval(const ReliabilityInputs& in) {
  const double x = continuous_optimal_interval(in);
  const double cap = static_cast<double>(in.steps);
  const int64_t down = static_cast<int64_t>(std::clamp(std::floor(x), 1.0, cap));
  const int64_t up = static_cast<int64_t>(std::clamp(std::ceil(x), 1.0, cap));
  if (up == down) return down;
  // The ceiling can lie past the largest interval at which the run still finishes (failure_load >= 1);
  // then only the floor is a candidate.
  if (!(failure_load(in, up) < 1.0)) return down;
  return e2e_objective_per_step_s(in, up) < e2e_objective_per_step_s(in, down) ? up : down;
}

E2EBreakdown e2e_time(const ReliabilityInputs& in, int64_t interval_steps) {
  E2EBreakdown b;
  b.checkpoints = (in.steps + interval_steps - 1) / interval_steps;
  b.training_s = static_cast<double>(in.steps) * in.step_time_s;
  b.saves_s = static_cast<double>(b.checkpoints) * in.save_time_s;
  b.init_s = in.init_time_s;
  b.total_s = (b.training_s + b.saves_s + b.init_s) / progress_share(in, interval_steps);
  b.failures = failure_rate_per_s(in) * b.total_s;
  b.repair_s = b.failures * mean_time_to_repair(in.recovery);
  b.lost_work_s = b.failures * static_cast<double>(interval_steps) * in.step_time_s / 2.0;
  return b;
}

double ettr(const ReliabilityInputs& in, int64_t interval_steps) {
  const E2EBreakdown b = e2e_time(in, interval_steps);
  return b.training_s / b.total_s;
}

}  // namespace stepsim::plan
