#include "stepsim/api/whatif.hpp"

#include <cmath>
#include <cstdio>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/report/text_format.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::api {
namespace {

nlohmann::json to_json(const plan::Outcome& o) {
  return {{"gpus", o.gpus},
          {"nodes", o.nodes},
          {"step_time_s", o.step_time_s},
          {"mfu", o.mfu},
          {"tokens_per_s", o.tokens_per_s},
          {"tflops_per_gpu", o.tflops_per_gpu},
          {"oom", o.oom},
          {"checkpoint_interval_steps", o.interval_steps},
          {"ettr", o.ettr},
          {"e2e_time_s", o.e2e_s},
          {"gpu_hours", o.gpu_hours},
          {"cost_usd", o.cost_usd}};
}

void check(const std::string& flag, double v, double lo, double hi, const std::string& unit) {
  if (!std::isfinite(v) || v < lo || v > hi)
    throw InputError(flag + ": must be in [" + report::format_number("%g", lo) + ", " + report::format_number("%g", hi) + "] " + unit + ", got " + report::format_number("%g", v));
}

}  // namespace

WhatIfOutput whatif(const WhatIfOptions& o) {
  if (o.scales.empty()) throw InputError("--scale: give at least one KEY=FACTOR, e.g. --scale inter_node_bandwidth=2");
  if (o.settings.steps < 1 || o.settings.steps > int64_t{1} << 40)
    throw InputError("--steps: must be in [1, 2^40], got " + std::to_string(o.settings.steps));
  check("--failure-rate", o.settings.failures_per_node_day, 0, 100, "failures per node-day");
  check("--storage-GBps", o.settings.storage_GBps, 1e-6, 1e6, "GB/s");
  check("--price", o.settings.usd_per_gpu_hour, 0, 1e6, "USD per GPU-hour");
  const JobTree tree = load_job_tree(o.job);
  WhatIfOutput out;
  out.before_job = spec::job_from_node(catalog::shipped().gpus, tree.root, tree.source);
  for (const std::string& s : o.scales) out.scales.push_back(plan::parse_scale(s));
  const spec::JobSpec after_job =
      spec::job_from_node(catalog::shipped().gpus, plan::apply_scales(tree.root, out.before_job, out.scales), tree.source + " (scaled)");
  out.before = plan::evaluate(catalog::shipped(), out.before_job, o.settings);
  out.after = plan::evaluate(catalog::shipped(), after_job, o.settings);

  nlohmann::json& j = out.json;
  j["scales"] = nlohmann::json::array();
  for (const plan::Scale& s : out.scales) j["scales"].push_back({{"key", s.key}, {"factor", s.factor}});
  j["steps"] = o.settings.steps;
  j["usd_per_gpu_hour"] = o.settings.usd_per_gpu_hour;
  j["before"] = to_json(out.before);
  j["after"] = to_json(out.after);
  return out;
}

}  // namespace stepsim::api
