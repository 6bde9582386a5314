#include "stepsim/api/whatif.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "stepsim/api/plan.hpp"
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
          {"memory_tight", o.memory_tight},
          {"checkpoint_interval_steps", o.interval_steps},
          {"ettr", o.ettr},
          {"e2e_time_s", o.e2e_s},
          {"gpu_hours", o.gpu_hours},
          {"cost_usd", o.cost_usd},
          {"mfu_of", o.mfu_of},
          {"intra_node_GBps", o.intra_node_GBps},
          {"inter_node", o.inter_node},
          {"notes", o.notes}};
}

void check(const std::string& flag, double v, double lo, double hi, const std::string& unit) {
  if (!std::isfinite(v) || v < lo || v > hi)
    throw InputError(flag + ": must be in [" + report::format_number("%g", lo) + ", " + report::format_number("%g", hi) + "] " + unit + ", got " + report::format_number("%g", v));
}

// Another framework on the after side (--to training.framework=F): the job's training keys F has no option for are
// dropped and named, as `plan --framework` drops them; one a --to also sets stays (and is refused by the job loader).
// An unknown framework is the job loader's to refuse.
void drop_keys_framework_lacks(YAML::Node root, const std::string& framework, const std::vector<std::string>& set,
                               std::vector<std::string>& notes) {
  const std::optional<spec::Framework> target = spec::framework_named(framework);
  if (!target) return;
  auto also_set = [&](const std::string& key) {
    return std::find(set.begin(), set.end(), "training." + key) != set.end();
  };
  const std::vector<std::string> dropped = spec::drop_training_keys_framework_lacks(root, *target, also_set);
  std::string names;
  for (const std::string& key : dropped) names += (names.empty() ? "" : ", ") + key;
  if (!names.empty()) {
    notes.push_back("--to training.framework=" + framework + ": the job's training keys " + framework +
                    " has no option for are dropped (" + names + ")");
  }
}

// The after side's --to settings (any job key, as --set writes it). Swapping the GPU swaps the node's NVLink rate with
// it: the job's own intra-node bandwidth is the old GPU's, so it is dropped unless a --to gives one.
YAML::Node apply_to(YAML::Node root, const spec::JobSpec& before, const std::vector<std::string>& to,
                    const std::vector<plan::Scale>& scales, std::vector<std::string>& notes) {
  bool gpu = false, intra = false;
  std::vector<std::string> set;
  std::string framework;
  for (const std::string& t : to) {
    const size_t eq = t.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == t.size()) {
      throw InputError("--to " + t + ": needs KEY=VALUE, e.g. --to cluster.gpu=B200");
    }
    const std::string key = t.substr(0, eq);
    // A key both scaled and set would keep only the --to: refused rather than one silently dropped.
    for (const plan::Scale& s : scales) {
      if (plan::scaled_key_path(s.key) == key) {
        throw InputError("--to " + t + ": " + key + " is also scaled (--scale " + s.key + "); give one of them");
      }
    }
    gpu |= key == "cluster.gpu";
    intra |= key.rfind("cluster.intra_node", 0) == 0;
    set.push_back(key);
    if (key == "training.framework") framework = t.substr(eq + 1);
  }
  if (!framework.empty()) drop_keys_framework_lacks(root, framework, set, notes);
  if (gpu && !intra && root["cluster"].IsMap() && root["cluster"]["intra_node"].IsMap() &&
      root["cluster"]["intra_node"]["bandwidth_GBps"].IsDefined()) {
    root["cluster"]["intra_node"].remove("bandwidth_GBps");
    notes.push_back("--to cluster.gpu: the job's cluster.intra_node.bandwidth_GBps (" +
                    report::format_number("%g", before.cluster.intra_node.bandwidth_GBps) +
                    " GB/s, the old GPU's NVLink) is dropped for the new GPU's own; --to "
                    "cluster.intra_node.bandwidth_GBps=... keeps another");
  }
  spec::apply_overrides(root, to);
  return root;
}

int64_t steps_for(const std::optional<double>& tokens, const spec::JobSpec& job, int64_t steps) {
  if (!tokens) return steps;
  const double per_step = static_cast<double>(job.training.global_batch_size) * job.model.seq_length;
  return static_cast<int64_t>(std::ceil(*tokens / per_step));
}

// The after job with its layout replaced by plan #1 of `stepsim plan` for it (the search the plan command runs: the
// job's framework and plan section, the best plan re-timed by the engine).
spec::JobSpec replanned(const YAML::Node& after_root, const spec::JobSpec& after_job, WhatIfOutput& out) {
  YAML::Emitter e;
  e << after_root;
  PlanOptions po;
  po.job.job_text = e.c_str();
  po.job.text_source = after_job.source;
  po.top = 1;
  po.simulate = 1;
  const PlanOutput p = plan(po);
  if (p.result.plans.empty()) {
    throw InputError("--replan: no plan of " + after_job.model.name + " fits " +
                     std::to_string(after_job.cluster.num_gpus) +
                     " x " + after_job.cluster.gpu + " at global batch " +
                     std::to_string(after_job.training.global_batch_size));
  }
  const plan::RankedPlan& best = p.result.plans.front();
  spec::JobSpec job =
      plan::job_for(after_job, best.plan, after_job.cluster.num_gpus, after_job.training.global_batch_size);
  spec::validate(catalog::shipped().gpus, job);
  out.replanned = plan::describe(best.plan);
  out.notes.push_back("--replan: the after side runs plan #1 of `stepsim plan` for it (" + out.replanned +
                      "), not the job's own layout");
  return job;
}

}  // namespace

WhatIfOutput whatif(const WhatIfOptions& o) {
  if (o.scales.empty() && o.to.empty()) {
    throw InputError("--scale / --to: give at least one, e.g. --scale inter_node_bandwidth=2 or --to cluster.gpu=B200");
  }
  if (o.tokens && (!std::isfinite(*o.tokens) || *o.tokens < 1 || *o.tokens > 1e18)) {
    throw InputError("--tokens: must be in [1, 1e18] tokens, got " + report::format_number("%g", *o.tokens));
  }
  if (o.settings.steps < 1 || o.settings.steps > int64_t{1} << 40)
    throw InputError("--steps: must be in [1, 2^40], got " + std::to_string(o.settings.steps));
  check("--failure-rate", o.settings.failures_per_node_day, 0, 100, "failures per node-day");
  check("--storage-GBps", o.settings.storage_GBps, 1e-6, 1e6, "GB/s");
  check("--price", o.settings.usd_per_gpu_hour, 0, 1e6, "USD per GPU-hour");
  const JobTree tree = load_job_tree(o.job);
  WhatIfOutput out;
  out.before_job = spec::job_from_node(catalog::shipped().gpus, tree.root, tree.source);
  for (const std::string& s : o.scales) out.scales.push_back(plan::parse_scale(s));
  const YAML::Node after_root =
      apply_to(plan::apply_scales(tree.root, out.before_job, out.scales), out.before_job, o.to, out.scales, out.notes);
  spec::JobSpec after_job = spec::job_from_node(catalog::shipped().gpus, after_root, tree.source + " (after)");
  if (o.replan) after_job = replanned(after_root, after_job, out);
  out.after_gpu = after_job.cluster.gpu;
  plan::WhatIfSettings before_settings = o.settings, after_settings = o.settings;
  before_settings.steps = out.before_steps = steps_for(o.tokens, out.before_job, o.settings.steps);
  after_settings.steps = out.after_steps = steps_for(o.tokens, after_job, o.settings.steps);
  out.before = plan::evaluate(catalog::shipped(), out.before_job, before_settings);
  out.after = plan::evaluate(catalog::shipped(), after_job, after_settings);

  nlohmann::json& j = out.json;
  j["scales"] = nlohmann::json::array();
  for (const plan::Scale& s : out.scales) j["scales"].push_back({{"key", s.key}, {"factor", s.factor}});
  j["to"] = o.to;
  j["notes"] = out.notes;
  j["steps"] = o.settings.steps;
  if (o.tokens) j["tokens"] = *o.tokens;
  j["usd_per_gpu_hour"] = o.settings.usd_per_gpu_hour;
  j["before"] = to_json(out.before);
  j["after"] = to_json(out.after);
  j["before"]["steps"] = out.before_steps;
  j["after"]["steps"] = out.after_steps;
  j["before"]["gpu"] = out.before_job.cluster.gpu;
  j["after"]["gpu"] = after_job.cluster.gpu;
  if (o.replan) j["after"]["replanned"] = out.replanned;
  return out;
}

}  // namespace stepsim::api
