#pragma once
// End-to-end training time with failures and checkpoints, in closed form: MoFa's fault-tolerance cost
// model (eq. 36-41), its E2E objective (eq. 43) and optimal checkpoint interval (eq. 44). docs/RELIABILITY.md.
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::plan {

constexpr double kSecondsPerDay = 86400.0;

// Defaults every command that turns a step into a run shares (reliability, plan --objective e2e, whatif):
// failures per node-day from MoFa Table 5, and an all-flash parallel file system's write bandwidth (an assumption).
constexpr double kDefaultFailuresPerNodeDay = 0.005;
constexpr double kDefaultStorageGBps = 100.0;

// One way of recovering from a failure: its share of failures and how long it takes.
struct RecoveryLevel {
  std::string name;
  double probability = 0;  // share of failures; the levels' shares sum to 1
  double time_s = 0;
};

// MoFa §3.4: process-, POD- and job-level recovery in the ratio 3:6:1, taking 141, 262 and 307 s.
std::vector<RecoveryLevel> mofa_recovery_levels();

// MoFa eq. 41: u_b = alpha u_bc + beta u_bp + gamma u_bj.
double mean_time_to_repair(const std::vector<RecoveryLevel>& levels);

// Bytes a Megatron checkpoint holds per parameter: weights plus optimizer state (fp32 master weights and
// Adam's two moments). Gradients are not saved, nor the fp32 gradient copy fp16 training keeps.
int checkpoint_bytes_per_param(const spec::TrainingSpec& training);

// Weights + optimizer state of the whole model (parameters counted once, whatever the parallelism).
double checkpoint_bytes(const spec::JobSpec& job);

// T_save of one synchronous checkpoint written at the storage's aggregate bandwidth.
double checkpoint_save_time_s(double bytes, double storage_bytes_per_s);

struct ReliabilityInputs {
  double step_time_s = 0;            // T_step
  int64_t nodes = 0;                 // N_nodes
  double failures_per_node_day = 0;  // r_f
  std::vector<RecoveryLevel> recovery = mofa_recovery_levels();
  double save_time_s = 0;  // T_save
  double init_time_s = 0;  // u_0, the first start-up
  int64_t steps = 0;       // S
};

// N_nodes r_f in failures per second: failures of all nodes together arrive as one Poisson process.
double failure_rate_per_s(const ReliabilityInputs& in);

// N r_f (u_b + I T_step / 2): the share of wall time a failure costs (repair plus half an interval of lost
// work). The run finishes only while this is below 1.
double failure_load(const ReliabilityInputs& in, int64_t interval_steps);

// MoFa eq. 43 per step: G / S = T_step (1 + T_save / (I T_step)) / (1 - failure_load).
double e2e_objective_per_step_s(const ReliabilityInputs& in, int64_t interval_steps);

// MoFa eq. 40: expected ETTR of an interval, independent of S (no u_0, every interval complete).
double expected_ettr(const ReliabilityInputs& in, int64_t interval_steps);

// MoFa eq. 44: the interval (steps, not rounded) where dG/dI = 0. Needs N r_f u_b < 1.
double continuous_optimal_interval(const ReliabilityInputs& in);

// The rounding rule after eq. 44: floor and ceiling of the continuous optimum (at least 1), whichever
// gives the smaller G (floor on a tie), capped at S.
int64_t optimal_interval(const ReliabilityInputs& in);

// Where the expected end-to-end time of S steps goes (eq. 37-39 solved for T_tr + T_in).
struct E2EBreakdown {
  double training_s = 0;       // T_tr = S T_step
  double saves_s = 0;          // ceil(S / I) T_save
  double init_s = 0;           // u_0
  double repair_s = 0;         // F_f u_b
  double lost_work_s = 0;      // F_f I T_step / 2
  double total_s = 0;          // T_tr + T_in
  double failures = 0;         // F_f = N r_f (T_tr + T_in)
  int64_t checkpoints = 0;     // ceil(S / I)
};

// Eq. 38 and 39 make T_in depend on itself through F_f; solved: total = (S T + u_0 + ceil(S/I) T_save) /
// (1 - failure_load). Needs failure_load < 1.
E2EBreakdown e2e_time(const ReliabilityInputs& in, int64_t interval_steps);

// Eq. 36 with eq. 37-39: T_tr / (T_tr + T_in). Equals eq. 40 when u_0 = 0 and I divides S.
double ettr(const ReliabilityInputs& in, int64_t interval_steps);

}  // namespace stepsim::plan
