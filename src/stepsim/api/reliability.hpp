#pragma once
// `stepsim reliability` as a library call (the CLI and the Python API): end-to-end time of S training steps with
// node failures, repairs and checkpoints (MoFa eq. 36-44), the optimal checkpoint interval, and optionally a
// Monte-Carlo spread of the run time. Inputs come from a job (step time simulated, nodes, checkpoint size) or from
// the options; options win. docs/RELIABILITY.md.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/api/job_input.hpp"
#include "stepsim/plan/reliability.hpp"
#include "stepsim/plan/reliability_monte_carlo.hpp"

namespace stepsim::api {

// An empty optional is a flag not given (its default, or the job's figure, applies).
struct ReliabilityOptions {
  JobInput job;
  std::optional<double> step_time_s, recovery_time_s, save_time_s, checkpoint_GB;
  std::optional<int64_t> nodes, steps, interval, runs;
  // A token budget instead of steps: ceil(tokens / (global batch x sequence)) of the job's steps (needs a job).
  std::optional<double> tokens;
  double failure_rate = plan::kDefaultFailuresPerNodeDay;  // MoFa Table 5: r_f = 0.5 % per node-day
  double storage_GBps = plan::kDefaultStorageGBps;          // docs/RELIABILITY.md says why 100
  bool storage_given = false;
  double init_time_s = 0;
  std::optional<std::string> recovery_mix, recovery_level_times;  // defaults "3:6:1", "141,262,307"
  std::optional<std::string> seed;  // decimal text, default "1" (parsed here: the CLI's parser wraps "-1")
};

// The inputs of MoFa's model as resolved from the options and the job, with where each came from.
struct ReliabilityResolved {
  plan::ReliabilityInputs in;
  std::string step_time_source, recovery_source, save_time_source;
  double checkpoint_bytes = 0;  // 0 when save_time_s gave T_save directly
  double storage_GBps = 0;      // likewise
  double tokens = 0, tokens_per_step = 0;  // with --tokens (0 otherwise)
};

struct ReliabilityOutput {
  ReliabilityResolved r;
  double continuous_optimum = 0;
  int64_t optimum = 0, interval = 0;
  plan::E2EBreakdown e2e;
  double ettr = 0;
  std::optional<plan::MonteCarloResult> mc;
  nlohmann::json json;  // what --json writes
};

// InputError (naming the CLI's flag) for bad or missing inputs.
ReliabilityOutput reliability(const ReliabilityOptions& o);
// What `stepsim reliability` prints: inputs and where each came from, the optimal interval, ETTR, the end-to-end time
// in parts and, with Monte Carlo runs, its mean and percentiles.
std::string reliability_text(const ReliabilityOutput& x);

// `reliability --report OUT.html`: ETTR over checkpoint intervals around the optimum (81 log-spaced intervals plus the
// optimum and the interval used), where the end-to-end time goes, and the Monte-Carlo spread when it ran.
std::string reliability_report_html(const ReliabilityOutput& x);

}  // namespace stepsim::api
