// stepsim reliability: end-to-end time of S training steps with node failures, repairs and checkpoints
// (MoFa eq. 36-44), the optimal checkpoint interval, and optionally a Monte-Carlo spread of the run time.
// Inputs come from a job (step time simulated, nodes, checkpoint size) or from flags; flags win.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/cli/commands.hpp"
#include "stepsim/cli/load_job.hpp"
#include "stepsim/plan/reliability.hpp"
#include "stepsim/plan/reliability_monte_carlo.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/sim/simulation.hpp"
#include "stepsim/spec/input_error.hpp"

namespace stepsim::cli {

namespace {

using plan::kDefaultFailuresPerNodeDay;  // MoFa Table 5: r_f = 0.5 % per node-day
using plan::kDefaultStorageGBps;         // docs/RELIABILITY.md says why 100

struct ReliabilityOptions {
  JobOptions job;
  double step_time_s = 0, failure_rate = kDefaultFailuresPerNodeDay, recovery_time_s = 0, save_time_s = 0;
  double checkpoint_GB = 0, storage_GBps = kDefaultStorageGBps, init_time_s = 0;
  int64_t nodes = 0, steps = 0, interval = 0, runs = 0;
  std::string seed = "1";  // parsed here: CLI11 turns "-1" into 2^64 - 1 for an unsigned option
  std::string recovery_mix = "3:6:1", recovery_level_times = "141,262,307", json_path;
  // Set when registered; count() > 0 tells a given flag from its default.
  CLI::Option *o_step_time = nullptr, *o_nodes = nullptr, *o_recovery_time = nullptr, *o_mix = nullptr,
              *o_level_times = nullptr, *o_save_time = nullptr, *o_checkpoint = nullptr, *o_storage = nullptr,
              *o_steps = nullptr, *o_interval = nullptr, *o_runs = nullptr, *o_seed = nullptr;
};

bool given(const CLI::Option* o) { return o->count() > 0; }

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// lo_open: the lower bound itself is not allowed.
void check_range(const std::string& flag, double v, double lo, bool lo_open, double hi, const std::string& unit) {
  const bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi;
  if (!ok) {
    throw InputError(flag + " " + num(v) + ": must be " + (unit.empty() ? "a number" : unit) + " in " +
                     (lo_open ? "(" : "[") + num(lo) + ", " + num(hi) + "]");
  }
}

void check_count(const std::string& flag, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    throw InputError(flag + " " + std::to_string(v) + ": must be an integer in " + std::to_string(lo) + ".." +
                     std::to_string(hi));
  }
}

uint64_t parse_seed(const std::string& text) {
  const std::string rule = "--seed " + text + ": must be an integer in 0..18446744073709551615";
  if (text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string::npos) {
    throw InputError(rule);
  }
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    throw InputError(rule);
  }
}

// Three numbers separated by `sep`, each finite and >= 0 and at most `hi`.
std::vector<double> parse_three(const std::string& flag, const std::string& text, char sep, double hi) {
  std::vector<double> v;
  std::stringstream in(text);
  std::string item;
  const std::string rule = flag + " " + text + ": must be three numbers in [0, " + num(hi) + "] separated by '" +
                           std::string(1, sep) + "'";
  while (std::getline(in, item, sep)) {
    size_t used = 0;
    double x = 0;
    try {
      x = std::stod(item, &used);
    } catch (const std::exception&) {
      throw InputError(rule);
    }
    if (used != item.size() || !std::isfinite(x) || x < 0 || x > hi) throw InputError(rule);
    v.push_back(x);
  }
  if (v.size() != 3 || text.empty() || text.back() == sep) throw InputError(rule);
  return v;
}

std::vector<plan::RecoveryLevel> recovery_levels(const ReliabilityOptions& o) {
  if (given(o.o_recovery_time)) {
    if (given(o.o_mix) || given(o.o_level_times)) {
      throw InputError("--recovery-time: give it or --recovery-mix/--recovery-level-times, not both");
    }
    check_range("--recovery-time", o.recovery_time_s, 0, false, 1e7, "seconds");
    return {{"given", 1.0, o.recovery_time_s}};
  }
  const std::vector<double> shares = parse_three("--recovery-mix", o.recovery_mix, ':', 1e9);
  const std::vector<double> times = parse_three("--recovery-level-times", o.recovery_level_times, ',', 1e7);
  const double total = shares[0] + shares[1] + shares[2];
  if (!(total > 0)) throw InputError("--recovery-mix " + o.recovery_mix + ": the three shares must not all be 0");
  std::vector<plan::RecoveryLevel> levels = plan::mofa_recovery_levels();
  for (size_t k = 0; k < 3; ++k) levels[k] = {levels[k].name, shares[k] / total, times[k]};
  return levels;
}

struct Resolved {
  plan::ReliabilityInputs in;
  std::string step_time_source, recovery_source, save_time_source;
  double checkpoint_bytes = 0;  // 0 when --save-time gave T_save directly
  double storage_GBps = 0;      // likewise
};

Resolved resolve(const ReliabilityOptions& o) {
  const bool has_job = !o.job.job_path.empty() || !o.job.megatron_args.empty();
  if (!has_job && !o.job.overrides.empty()) throw InputError("--set: needs a job file or --megatron-args");
  std::optional<spec::JobSpec> job;
  if (has_job) job = load_job(o.job);
  Resolved r;
  plan::ReliabilityInputs& in = r.in;

  if (!given(o.o_steps)) {
    throw InputError("--steps: required (training steps to run; the job file has no training-length key)");
  }
  check_count("--steps", o.steps, 1, 1'000'000'000'000);
  in.steps = o.steps;

  if (given(o.o_nodes)) {
    check_count("--nodes", o.nodes, 1, 10'000'000);
    in.nodes = o.nodes;
  } else if (job) {
    // A partly filled last node still fails like a whole one.
    in.nodes = (job->cluster.num_gpus + job->cluster.gpus_per_node - 1) / job->cluster.gpus_per_node;
  } else {
    throw InputError("--nodes: required without a job (nodes the job runs on, >= 1)");
  }

  check_range("--failure-rate", o.failure_rate, 0, true, 100, "failures per node-day");
  in.failures_per_node_day = o.failure_rate;
  in.recovery = recovery_levels(o);
  r.recovery_source = given(o.o_recovery_time) ? "--recovery-time" : "MoFa eq. 41";
  check_range("--init-time", o.init_time_s, 0, false, 1e7, "seconds");
  in.init_time_s = o.init_time_s;

  if (given(o.o_save_time)) {
    if (given(o.o_checkpoint) || given(o.o_storage)) {
      throw InputError("--save-time: give it or --checkpoint-GB/--storage-GBps, not both");
    }
    check_range("--save-time", o.save_time_s, 0, false, 1e7, "seconds");
    in.save_time_s = o.save_time_s;
    r.save_time_source = "--save-time";
  } else {
    check_range("--storage-GBps", o.storage_GBps, 0, true, 1e6, "GB/s");
    if (given(o.o_checkpoint)) {
      check_range("--checkpoint-GB", o.checkpoint_GB, 0, true, 1e9, "GB");
      r.checkpoint_bytes = o.checkpoint_GB * 1e9;
    } else if (job) {
      r.checkpoint_bytes = plan::checkpoint_bytes(*job);
    } else {
      throw InputError("--save-time: required without a job (seconds per checkpoint, or --checkpoint-GB)");
    }
    r.storage_GBps = o.storage_GBps;
    in.save_time_s = plan::checkpoint_save_time_s(r.checkpoint_bytes, o.storage_GBps * 1e9);
    r.save_time_source = given(o.o_checkpoint) ? "--checkpoint-GB" : "weights + optimizer state";
  }

  if (given(o.o_step_time)) {
    check_range("--step-time", o.step_time_s, 0, true, 1e6, "seconds");
    in.step_time_s = o.step_time_s;
    r.step_time_source = "--step-time";
  } else if (job) {
    const sim::Simulation s = sim::run_simulation(*job, {0});
    in.step_time_s = report::summarize(s, 0).step_time_s;
    r.step_time_source = "simulated";
  } else {
    throw InputError("--step-time: required without a job (seconds per training step, > 0)");
  }
  return r;
}

// Repairs alone must take less than all of the time, or no interval lets the run finish.
void check_repairs_keep_up(const plan::ReliabilityInputs& in) {
  const double lambda = plan::failure_rate_per_s(in);
  const double ub = plan::mean_time_to_repair(in.recovery);
  if (!(lambda * ub < 1.0)) {
    throw InputError("--failure-rate x --nodes: a failure every " + num(1.0 / lambda) + " s but repair takes " +
                     num(ub) + " s (N r_f u_b must be below 1): the run never finishes");
  }
}

// Repairs plus lost work at the interval must take less than all of the time.
void check_interval_finishes(const plan::ReliabilityInputs& in, int64_t interval, bool from_flag) {
  const double load = plan::failure_load(in, interval);
  if (load < 1.0) return;
  const std::string what = from_flag ? "--interval " + std::to_string(interval)
                                     : "--step-time " + num(in.step_time_s) + " (even checkpointing every step)";
  throw InputError(what + ": N r_f (u_b + I T_step / 2) = " + num(load) +
                   " must be below 1 (a failure costs more than the time between failures): the run never finishes");
}

// Seconds, with days beside a long time.
std::string secs(double s) {
  char b[64];
  if (s >= 86400.0) std::snprintf(b, sizeof b, "%.1f s = %.2f days", s, s / 86400.0);
  else std::snprintf(b, sizeof b, "%.3f s", s);
  return b;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

struct Outcome {
  Resolved r;
  double continuous_optimum = 0;
  int64_t optimum = 0, interval = 0;
  plan::E2EBreakdown e2e;
  double ettr = 0;
  std::optional<plan::MonteCarloResult> mc;
};

std::string to_text(const Outcome& x) {
  const plan::ReliabilityInputs& in = x.r.in;
  const double per_day = static_cast<double>(in.nodes) * in.failures_per_node_day;
  std::ostringstream o;
  o << "stepsim reliability: " << in.nodes << " nodes, " << in.steps << " steps of " << secs(in.step_time_s) << " ("
    << x.r.step_time_source << ")\n";
  o << "  failures          " << num(in.failures_per_node_day) << " per node-day x " << in.nodes
    << " nodes = " << fmt("%.4g", per_day) << " per day, one every " << fmt("%.2f", 24.0 / per_day) << " h\n";
  o << "  repair u_b        " << secs(plan::mean_time_to_repair(in.recovery)) << " (" << x.r.recovery_source;
  if (in.recovery.size() > 1) {
    for (size_t k = 0; k < in.recovery.size(); ++k) {
      o << (k ? ", " : ": ") << fmt("%.1f", 100.0 * in.recovery[k].probability) << " % " << in.recovery[k].name
        << " " << secs(in.recovery[k].time_s);
    }
  }
  o << ")\n  checkpoint save   " << secs(in.save_time_s) << " (" << x.r.save_time_source;
  if (x.r.checkpoint_bytes > 0) {
    o << ": " << fmt("%.1f", x.r.checkpoint_bytes / 1e9) << " GB at "
      << fmt("%.1f", x.r.storage_GBps) << " GB/s";
  }
  o << ")\n  optimal interval  " << x.optimum << " steps = " << secs(static_cast<double>(x.optimum) * in.step_time_s)
    << " (eq. 44: " << fmt("%.3f", x.continuous_optimum) << " steps; of floor and ceiling the smaller G, eq. 43)\n";
  if (x.interval != x.optimum) o << "  interval used     " << x.interval << " steps (--interval)\n";
  o << "  ETTR              " << fmt("%.3f", 100.0 * x.ettr) << " %\n";
  o << "  end-to-end time   " << secs(x.e2e.total_s) << "\n";
  auto part = [&](const char* name, double s, const std::string& how) {
    o << "    " << name << fmt("%16.3f s", s) << fmt("  %6.2f %%", 100.0 * s / x.e2e.total_s) << how << "\n";
  };
  part("training        ", x.e2e.training_s, "");
  part("checkpoint saves", x.e2e.saves_s, "  " + std::to_string(x.e2e.checkpoints) + " saves");
  part("repair          ", x.e2e.repair_s, "  " + fmt("%.2f", x.e2e.failures) + " failures expected");
  part("lost work       ", x.e2e.lost_work_s, "  half an interval per failure");
  if (in.init_time_s > 0) part("start-up        ", x.e2e.init_s, "");
  if (x.mc) {
    const plan::MonteCarloResult& m = *x.mc;
    o << "  Monte Carlo       " << m.runs << " runs, seed " << m.seed << ": mean " << fmt("%.1f s", m.mean_s)
      << " +- " << fmt("%.1f s", m.std_error_s) << " (std. error), " << fmt("%.2f", m.mean_failures)
      << " failures per run\n";
    o << "                    p50 " << fmt("%.1f s", m.p50_s) << ", p95 " << fmt("%.1f s", m.p95_s) << ", p99 "
      << fmt("%.1f s", m.p99_s) << "\n";
  }
  return o.str();
}

nlohmann::json to_json(const Outcome& x) {
  const plan::ReliabilityInputs& in = x.r.in;
  nlohmann::json levels = nlohmann::json::array();
  for (const auto& l : in.recovery) levels.push_back({{"name", l.name}, {"probability", l.probability}, {"time_s", l.time_s}});
  nlohmann::json j = {
      {"optimal_checkpoint_interval_steps", x.optimum},
      {"continuous_optimal_interval_steps", x.continuous_optimum},
      {"checkpoint_interval_steps", x.interval},
      {"ettr", x.ettr},
      {"e2e_time_s", x.e2e.total_s},
      {"expected_failures", x.e2e.failures},
      {"checkpoints", x.e2e.checkpoints},
      {"e2e_breakdown_s",
       {{"training", x.e2e.training_s}, {"checkpoint_saves", x.e2e.saves_s}, {"repair", x.e2e.repair_s},
        {"lost_work", x.e2e.lost_work_s}, {"start_up", x.e2e.init_s}}},
      {"inputs",
       {{"step_time_s", in.step_time_s}, {"step_time_source", x.r.step_time_source}, {"nodes", in.nodes},
        {"failure_rate_per_node_day", in.failures_per_node_day},
        {"recovery_time_s", plan::mean_time_to_repair(in.recovery)}, {"recovery_levels", levels},
        {"save_time_s", in.save_time_s},
        {"checkpoint_bytes", x.r.checkpoint_bytes > 0 ? nlohmann::json(x.r.checkpoint_bytes) : nlohmann::json()},
        {"storage_GBps", x.r.storage_GBps > 0 ? nlohmann::json(x.r.storage_GBps) : nlohmann::json()},
        {"init_time_s", in.init_time_s}, {"steps", in.steps}}}};
  if (x.mc) {
    const plan::MonteCarloResult& m = *x.mc;
    j["monte_carlo"] = {{"runs", m.runs},         {"seed", m.seed},       {"mean_s", m.mean_s},
                        {"std_error_s", m.std_error_s}, {"p50_s", m.p50_s}, {"p95_s", m.p95_s},
                        {"p99_s", m.p99_s},       {"min_s", m.min_s},     {"max_s", m.max_s},
                        {"mean_failures", m.mean_failures}};
  }
  return j;
}

int run_reliability(const ReliabilityOptions& o) {
  if (given(o.o_seed) && !given(o.o_runs)) throw InputError("--seed: needs --monte-carlo RUNS");
  if (given(o.o_runs)) check_count("--monte-carlo", o.runs, 1, 1'000'000);
  const uint64_t seed = parse_seed(o.seed);
  Outcome x;
  x.r = resolve(o);
  const plan::ReliabilityInputs& in = x.r.in;
  check_repairs_keep_up(in);
  x.continuous_optimum = plan::continuous_optimal_interval(in);
  x.optimum = plan::optimal_interval(in);
  x.interval = x.optimum;
  if (given(o.o_interval)) {
    check_count("--interval", o.interval, 1, in.steps);
    x.interval = o.interval;
  }
  check_interval_finishes(in, x.interval, given(o.o_interval));
  x.e2e = plan::e2e_time(in, x.interval);
  x.ettr = x.e2e.training_s / x.e2e.total_s;
  if (given(o.o_runs)) {
    const double expected = x.e2e.failures * static_cast<double>(o.runs);
    if (expected > static_cast<double>(plan::kMaxMonteCarloFailures)) {
      throw InputError("--monte-carlo " + std::to_string(o.runs) + ": " + fmt("%.3g", x.e2e.failures) +
                       " failures per run would make " + fmt("%.3g", expected) + " in all; the limit is " +
                       std::to_string(plan::kMaxMonteCarloFailures));
    }
    x.mc = plan::simulate_runs(in, x.interval, o.runs, seed);
  }
  std::cout << to_text(x);
  if (!o.json_path.empty()) write_output_file(o.json_path, to_json(x).dump(2) + "\n", "reliability JSON");
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
  o->o_steps = cmd->add_option("--steps", o->steps, "training steps to run (required)");
  o->o_interval = cmd->add_option("--interval", o->interval, "checkpoint every this many steps (default: the optimum)");
  o->o_runs = cmd->add_option("--monte-carlo", o->runs, "also simulate this many whole runs");
  o->o_seed = cmd->add_option("--seed", o->seed, "seed of the Monte-Carlo runs")->capture_default_str();
  cmd->add_option("--json", o->json_path, "write the results as JSON here")->check(output_file());
  return [cmd, o]() { return cmd->parsed() ? run_reliability(*o) : -1; };
}

}  // namespace stepsim::cli
