// stepsim reliability: end-to-end time of S training steps with node failures, repairs and checkpoints
// (MoFa eq. 36-44), the optimal checkpoint interval, and optionally a Monte-Carlo spread of the run time.
// Inputs come from a job (step time simulated, nodes, checkpoint size) or from flags; flags win. The work is the
// library's (api/reliability.hpp); this file parses and prints.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "stepsim/io/utf8.hpp"
#include "stepsim/api/reliability.hpp"
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {

namespace {

using plan::kDefaultFailuresPerNodeDay;
using plan::kDefaultStorageGBps;

struct ReliabilityOptions {
  JobOptions job;
  double step_time_s = 0, failure_rate = kDefaultFailuresPerNodeDay, recovery_time_s = 0, save_time_s = 0;
  double checkpoint_GB = 0, storage_GBps = kDefaultStorageGBps, init_time_s = 0;
  int64_t nodes = 0, steps = 0, interval = 0, runs = 0;
  double tokens = 0;
  std::string seed = "1";  // parsed here: CLI11 turns "-1" into 2^64 - 1 for an unsigned option
  std::string recovery_mix = "3:6:1", recovery_level_times = "141,262,307", json_path, report_path;
  // Set when registered; count() > 0 tells a given flag from its default.
  CLI::Option *o_step_time = nullptr, *o_nodes = nullptr, *o_recovery_time = nullptr, *o_mix = nullptr,
              *o_level_times = nullptr, *o_save_time = nullptr, *o_checkpoint = nullptr, *o_storage = nullptr,
              *o_steps = nullptr, *o_interval = nullptr, *o_runs = nullptr, *o_seed = nullptr, *o_tokens = nullptr;
};

bool given(const CLI::Option* o) { return o->count() > 0; }

template <class T>
std::optional<T> if_given(const CLI::Option* o, const T& v) {
  return given(o) ? std::optional<T>(v) : std::nullopt;
}

api::ReliabilityOptions library_options(const ReliabilityOptions& o) {
  api::ReliabilityOptions a;
  a.job = o.job;
  a.step_time_s = if_given(o.o_step_time, o.step_time_s);
  a.recovery_time_s = if_given(o.o_recovery_time, o.recovery_time_s);
  a.save_time_s = if_given(o.o_save_time, o.save_time_s);
  a.checkpoint_GB = if_given(o.o_checkpoint, o.checkpoint_GB);
  a.nodes = if_given(o.o_nodes, o.nodes);
  a.steps = if_given(o.o_steps, o.steps);
  a.tokens = if_given(o.o_tokens, o.tokens);
  a.interval = if_given(o.o_interval, o.interval);
  a.runs = if_given(o.o_runs, o.runs);
  a.failure_rate = o.failure_rate;
  a.storage_GBps = o.storage_GBps;
  a.storage_given = given(o.o_storage);
  a.init_time_s = o.init_time_s;
  a.recovery_mix = if_given(o.o_mix, o.recovery_mix);
  a.recovery_level_times = if_given(o.o_level_times, o.recovery_level_times);
  a.seed = if_given(o.o_seed, o.seed);
  return a;
}

int run_reliability(const ReliabilityOptions& o) {
  const api::ReliabilityOutput x = api::reliability(library_options(o));
  std::cout << api::reliability_text(x);
  if (!o.json_path.empty()) write_output_file(o.json_path, io::json_text(x.json, 2) + "\n", "reliability JSON");
  if (!o.report_path.empty()) write_output_file(o.report_path, api::reliability_report_html(x), "--report");
  return 0;
}

}  // namespace

Action add_reliability(CLI::App& app) {
  auto o = std::make_shared<ReliabilityOptions>();
  CLI::App* cmd = app.add_subcommand(
      "reliability", "end-to-end training time with failures and checkpoints; optimal checkpoint interval (MoFa)");
  add_job_options(*cmd, o->job);
  o->o_step_time = cmd->add_option("--step-time", o->step_time_s, "seconds per step (default: simulate the job)");
  o->o_nodes = cmd->add_option("--nodes", o->nodes, "nodes (default: the job's num_gpus / gpus_per_node, rounded up)");
  cmd->add_option("--failure-rate", o->failure_rate, "failures per node per day")->capture_default_str();
  o->o_recovery_time =
      cmd->add_option("--recovery-time", o->recovery_time_s, "mean seconds to repair a failure (instead of the levels)");
  o->o_mix = cmd->add_option("--recovery-mix", o->recovery_mix, "shares of process:pod:job-level recoveries")
                 ->capture_default_str();
  o->o_level_times = cmd->add_option("--recovery-level-times", o->recovery_level_times,
                                     "seconds of a process,pod,job-level recovery")
                         ->capture_default_str();
  o->o_save_time = cmd->add_option("--save-time", o->save_time_s, "seconds per checkpoint save (default: size / bandwidth)");
  o->o_checkpoint = cmd->add_option("--checkpoint-GB", o->checkpoint_GB,
                                    "checkpoint size in GB (default: the job's weights + optimizer state)");
  o->o_storage = cmd->add_option("--storage-GBps", o->storage_GBps, "storage write bandwidth, GB/s")
                     ->capture_default_str();
  cmd->add_option("--init-time", o->init_time_s, "seconds of the first start-up (u_0)")->capture_default_str();
  o->o_steps = cmd->add_option("--steps", o->steps, "training steps to run (required, or --tokens)");
  o->o_tokens = cmd->add_option("--tokens", o->tokens,
                                "a token budget instead of --steps, with a job: tokens / (global batch x sequence) steps, "
                                "e.g. 15e12");
  o->o_interval = cmd->add_option("--interval", o->interval, "checkpoint every this many steps (default: the optimum)");
  o->o_runs = cmd->add_option("--monte-carlo", o->runs, "also simulate this many whole runs");
  o->o_seed = cmd->add_option("--seed", o->seed, "seed of the Monte-Carlo runs")->capture_default_str();
  cmd->add_option("--json", o->json_path, "write the results as JSON here")->check(output_file());
  cmd->add_option("--report", o->report_path, "write an HTML report (ETTR against interval, Monte Carlo) here")
      ->check(output_file());
  return [cmd, o]() { return cmd->parsed() ? run_reliability(*o) : -1; };
}

}  // namespace stepsim::cli
