#include "stepsim/api/reliability.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "stepsim/report/command_reports.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/report/text_format.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::api {

namespace {

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
  if (o.recovery_time_s) {
    if (o.recovery_mix || o.recovery_level_times) {
      throw InputError("--recovery-time: give it or --recovery-mix/--recovery-level-times, not both");
    }
    check_range("--recovery-time", *o.recovery_time_s, 0, false, 1e7, "seconds");
    return {{"given", 1.0, *o.recovery_time_s}};
  }
  const std::string mix = o.recovery_mix.value_or("3:6:1");
  const std::vector<double> shares = parse_three("--recovery-mix", mix, ':', 1e9);
  const std::vector<double> times =
      parse_three("--recovery-level-times", o.recovery_level_times.value_or("141,262,307"), ',', 1e7);
  const double total = shares[0] + shares[1] + shares[2];
  if (!(total > 0)) throw InputError("--recovery-mix " + mix + ": the three shares must not all be 0");
  std::vector<plan::RecoveryLevel> levels = plan::mofa_recovery_levels();
  for (size_t k = 0; k < 3; ++k) levels[k] = {levels[k].name, shares[k] / total, times[k]};
  return levels;
}

ReliabilityResolved resolve(const ReliabilityOptions& o) {
  const bool job_given = has_job(o.job);
  if (!job_given && !o.job.overrides.empty()) throw InputError("--set: needs a job file or --megatron-args");
  std::optional<spec::JobSpec> job;
  if (job_given) job = load_job(o.job);
  ReliabilityResolved r;
  plan::ReliabilityInputs& in = r.in;

  if (o.tokens) {
    if (o.steps) throw InputError("--tokens: gives the steps; not with --steps");
    if (!job) throw InputError("--tokens: needs a job (its global batch x sequence is the tokens of a step)");
    check_range("--tokens", *o.tokens, 1, false, 1e18, "tokens");
    r.tokens = *o.tokens;
    r.tokens_per_step = static_cast<double>(job->training.global_batch_size) * job->model.seq_length;
    in.steps = static_cast<int64_t>(std::ceil(r.tokens / r.tokens_per_step));
  } else {
    if (!o.steps) {
      throw InputError("--steps: required (training steps to run; the job file has no training-length key), or "
                       "--tokens with a job");
    }
    check_count("--steps", *o.steps, 1, 1'000'000'000'000);
    in.steps = *o.steps;
  }

  if (o.nodes) {
    check_count("--nodes", *o.nodes, 1, 10'000'000);
    in.nodes = *o.nodes;
  } else if (job) {
    // A partly filled last node still fails like a whole one.
    in.nodes = (job->cluster.num_gpus + job->cluster.gpus_per_host() - 1) / job->cluster.gpus_per_host();
  } else {
    throw InputError("--nodes: required without a job (nodes the job runs on, >= 1)");
  }

  check_range("--failure-rate", o.failure_rate, 0, true, 100, "failures per node-day");
  in.failures_per_node_day = o.failure_rate;
  in.recovery = recovery_levels(o);
  r.recovery_source = o.recovery_time_s ? "--recovery-time" : "MoFa eq. 41";
  check_range("--init-time", o.init_time_s, 0, false, 1e7, "seconds");
  in.init_time_s = o.init_time_s;

  if (o.save_time_s) {
    if (o.checkpoint_GB || o.storage_given) {
      throw InputError("--save-time: give it or --checkpoint-GB/--storage-GBps, not both");
    }
    check_range("--save-time", *o.save_time_s, 0, false, 1e7, "seconds");
    in.save_time_s = *o.save_time_s;
    r.save_time_source = "--save-time";
  } else {
    check_range("--storage-GBps", o.storage_GBps, 0, true, 1e6, "GB/s");
    if (o.checkpoint_GB) {
      check_range("--checkpoint-GB", *o.checkpoint_GB, 0, true, 1e9, "GB");
      r.checkpoint_bytes = *o.checkpoint_GB * 1e9;
    } else if (job) {
      r.checkpoint_bytes = plan::checkpoint_bytes(*job);
    } else {
      throw InputError("--save-time: required without a job (seconds per checkpoint, or --checkpoint-GB)");
    }
    r.storage_GBps = o.storage_GBps;
    in.save_time_s = plan::checkpoint_save_time_s(r.checkpoint_bytes, o.storage_GBps * 1e9);
    r.save_time_source = o.checkpoint_GB ? "--checkpoint-GB" : "weights + optimizer state";
  }

  if (o.step_time_s) {
    check_range("--step-time", *o.step_time_s, 0, true, 1e6, "seconds");
    in.step_time_s = *o.step_time_s;
    r.step_time_source = "--step-time";
  } else if (job) {
    const sim::Simulation s = sim::run_simulation(catalog::shipped(), *job, {0});
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

nlohmann::json to_json(const ReliabilityOutput& x) {
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
  if (x.r.tokens > 0) {
    j["inputs"]["tokens"] = x.r.tokens;
    j["inputs"]["tokens_per_step"] = x.r.tokens_per_step;
  }
  if (x.mc) {
    const plan::MonteCarloResult& m = *x.mc;
    j["monte_carlo"] = {{"runs", m.runs},         {"seed", m.seed},       {"mean_s", m.mean_s},
                        {"std_error_s", m.std_error_s}, {"p50_s", m.p50_s}, {"p95_s", m.p95_s},
                        {"p99_s", m.p99_s},       {"min_s", m.min_s},     {"max_s", m.max_s},
                        {"mean_failures", m.mean_failures}};
  }
  return j;
}

}  // namespace

ReliabilityOutput reliability(const ReliabilityOptions& o) {
  if (o.seed && !o.runs) throw InputError("--seed: needs --monte-carlo RUNS");
  if (o.runs) check_count("--monte-carlo", *o.runs, 1, 1'000'000);
  const uint64_t seed = parse_seed(o.seed.value_or("1"));
  ReliabilityOutput x;
  x.r = resolve(o);
  const plan::ReliabilityInputs& in = x.r.in;
  check_repairs_keep_up(in);
  x.continuous_optimum = plan::continuous_optimal_interval(in);
  x.optimum = plan::optimal_interval(in);
  x.interval = x.optimum;
  if (o.interval) {
    check_count("--interval", *o.interval, 1, in.steps);
    x.interval = *o.interval;
  }
  check_interval_finishes(in, x.interval, o.interval.has_value());
  x.e2e = plan::e2e_time(in, x.interval);
  x.ettr = x.e2e.training_s / x.e2e.total_s;
  if (o.runs) {
    const double expected = x.e2e.failures * static_cast<double>(*o.runs);
    if (expected > static_cast<double>(plan::kMaxMonteCarloFailures)) {
      throw InputError("--monte-carlo " + std::to_string(*o.runs) + ": " + report::format_number("%.3g", x.e2e.failures) +
                       " failures per run would make " + report::format_number("%.3g", expected) + " in all; the limit is " +
                       std::to_string(plan::kMaxMonteCarloFailures));
    }
    x.mc = plan::simulate_runs(in, x.interval, *o.runs, seed);
  }
  x.json = to_json(x);
  return x;
}

std::string reliability_report_html(const ReliabilityOutput& x) {
  const plan::ReliabilityInputs& in = x.r.in;
  const double centre = static_cast<double>(std::max<int64_t>(1, x.optimum));
  const double lo = std::max(1.0, centre / 30), hi = std::max(lo, std::min(static_cast<double>(in.steps), centre * 30));
  std::vector<int64_t> ks{x.optimum, x.interval};
  for (int i = 0; i <= 80; ++i) ks.push_back(std::llround(lo * std::pow(hi / lo, i / 80.0)));
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  nlohmann::json curve = nlohmann::json::array();
  for (int64_t k : ks) {
    if (k >= 1) curve.push_back({{"interval", k}, {"ettr", plan::expected_ettr(in, k)}});
  }
  return report::reliability_report_html(x.json, curve);
}

}  // namespace stepsim::api
