#include "stepsim/api/plan.hpp"

#include "stepsim/report/text_format.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/report/command_reports.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::api {

namespace {

// A refused flag, worded as the command line's own checks word theirs: "--top: must be at least 1, got 0".
[[noreturn]] void refuse(const std::string& flag, const std::string& rule, double got) {
  throw InputError(flag + ": " + rule + ", got " + report::format_number("%g", got));
}

void check_finite(const std::string& flag, double v, double lo) {
  if (!std::isfinite(v) || v < lo) {
    refuse(flag, "must be a finite number of at least " + report::format_number("%g", lo), v);
  }
}

// 0 (or absent) means the job's own value; a negative count is a mistake, never "the default".
void check_counts(int gpus, int64_t global_batch) {
  if (gpus < 0) refuse("--gpus", "must be a positive GPU count", gpus);
  if (global_batch < 0) {
    refuse("--global-batch", "must be a positive number of sequences", static_cast<double>(global_batch));
  }
}

// The framework's own space narrowed by the user's constraints (issue 46 item 2): what the walk may vary.
void apply_framework_space(const PlanOptions& o, const spec::JobSpec& base, plan::SpaceOptions& space) {
  const plan::FrameworkSpace fs = plan::framework_space(base.training.framework);
  plan::Constraints user = plan::parse_constraints(o.fix, o.allow, o.exclude);
  plan::cap_tensor_parallel(user, o.max_tp_per_nvlink_domain, base.cluster.gpus_per_node);
  space.framework = fs.framework;
  space.optimizer_variants = fs.optimizer_variants;
  space.recomputes = fs.recomputes;
  space.constraints = plan::merge_constraints(fs, user);
  // A micro-batch size or a virtual-stage count the user fixes or allows is searched even where the default lists
  // do not hold it.
  if (const auto& v = user.allowed[static_cast<int>(plan::PlanKey::MicroBatch)]) space.micro_batch_sizes = *v;
  if (const auto& v = user.allowed[static_cast<int>(plan::PlanKey::VirtualStages)]) space.virtual_stages = *v;
}

}  // namespace

JobInput plan_job_input(const PlanOptions& o) {
  JobInput in = o.job;
  if (o.framework.empty()) return in;
  if (o.framework != "megatron" && o.framework != "torchtitan" && o.framework != "deepspeed") {
    throw InputError("--framework " + o.framework + ": must be megatron, torchtitan or deepspeed");
  }
  in.overrides.push_back("training.framework=" + o.framework);
  // DeepSpeed's profile is its ZeRO-3 (every plan of its space is); the job's own stage would be refused first.
  if (o.framework == "deepspeed") in.overrides.push_back("training.zero_stage=3");
  return in;
}

namespace {

// The job re-planned for another framework (--framework): the job's own keys that framework has no option for are
// dropped, since its space decides them, and named in `dropped`; a key the user sets with --set stays (and is refused).
spec::JobSpec load_plan_job(const PlanOptions& o, std::vector<std::string>* dropped) {
  const JobInput in = plan_job_input(o);
  if (o.framework.empty()) return load_job(in);
  JobTree t = load_job_tree(in);
  const spec::Framework target = spec::framework_named(o.framework).value_or(spec::Framework::MegatronCore);
  auto user_set = [&](const std::string& key) {
    return std::any_of(o.job.overrides.begin(), o.job.overrides.end(),
                       [&](const std::string& ov) { return ov.rfind("training." + key + "=", 0) == 0; });
  };
  *dropped = spec::drop_training_keys_framework_lacks(t.root, target, user_set);
  return spec::job_from_node(catalog::shipped().gpus, t.root, t.source, in.overrides);
}

// The job file's plan section under the flags: its framework and TP cap where the flags give none, its constraints for
// the keys the flags do not constrain (docs/PLANNER.md, "Frameworks and constraints").
PlanOptions with_plan_section(const PlanOptions& flags, bool* used) {
  const spec::JobSpec job = load_job(flags.job);
  const spec::PlanSection& p = job.plan;
  *used = p.any();
  if (!p.any()) return flags;
  try {
    plan::parse_constraints(p.fix, p.allow, p.exclude);
  } catch (const InputError& e) {
    throw InputError(job.source + ": key plan: " + e.what());
  }
  PlanOptions o = flags;
  const plan::ConstraintArgs m =
      plan::merge_constraint_args({p.fix, p.allow, p.exclude}, {flags.fix, flags.allow, flags.exclude});
  o.fix = m.fix;
  o.allow = m.allow;
  o.exclude = m.exclude;
  if (o.framework.empty()) o.framework = p.framework;
  if (o.max_tp_per_nvlink_domain == 0) o.max_tp_per_nvlink_domain = p.max_tp_per_nvlink_domain;
  return o;
}

}  // namespace

PlanOutput plan(const PlanOptions& flags, const Distribution& dist) {
  check_counts(flags.gpus, flags.global_batch);
  if (flags.max_tp_per_nvlink_domain < 0) {
    throw InputError("--max-tp-per-nvlink-domain " + std::to_string(flags.max_tp_per_nvlink_domain) +
                     ": must be at least 1");
  }
  bool from_file = false;
  const PlanOptions o = with_plan_section(flags, &from_file);
  std::vector<std::string> dropped;
  const spec::JobSpec base = load_plan_job(o, &dropped);
  const int gpus = o.gpus > 0 ? o.gpus : base.cluster.num_gpus;
  const int64_t gbs = o.global_batch > 0 ? o.global_batch : base.training.global_batch_size;
  if (o.top < 1) refuse("--top", "must be at least 1", o.top);
  if (o.simulate < 0) refuse("--simulate", "must be at least 0", o.simulate);
  if (o.threads < 0) refuse("--threads", "must be at least 0 (0 = all cores)", o.threads);
  if (!(o.memory_margin >= 0.0 && o.memory_margin <= 0.5)) {
    refuse("--memory-margin", "must be in [0, 0.5]", o.memory_margin);
  }
  if (!(o.tie_tolerance >= 0.0 && o.tie_tolerance <= 0.5)) {
    refuse("--tie-tolerance", "must be in [0, 0.5]", o.tie_tolerance);
  }
  check_finite("--price", o.price, 0);

  plan::PlannerOptions po;
  po.space.gpus = gpus;
  po.space.global_batch = gbs;
  po.space.search_layouts = !o.keep_layout;
  apply_framework_space(o, base, po.space);
  if (!o.fp8_recipes.empty()) po.space.fp8_recipes = plan::parse_fp8_recipes(catalog::shipped().gpus, o.fp8_recipes, base);
  po.top = o.top;
  po.simulate = o.simulate;
  po.threads = o.threads;
  po.price_per_gpu_hour = o.price;
  po.memory_margin = o.memory_margin;
  po.tie_tolerance = o.tie_tolerance;
  po.progress = o.progress;
  // A run's length (--tokens, --steps) asks for the run's time: every plan runs the same steps on the same GPUs, so
  // the end-to-end ranking is the step ranking, with each plan's run time, checkpoints and cost beside it.
  const bool run_length = (o.tokens || o.steps) && o.objective == "step";
  const std::string objective = run_length ? "e2e" : o.objective;
  std::string tokens_note;
  if (objective == "e2e") {
    po.objective = plan::Objective::E2E;
    plan::E2EOptions e;
    if (o.tokens) {
      // Every plan runs the same global batch of the same sequences: one step count for all.
      if (o.steps) throw InputError("--tokens: gives the steps of the run; not with --steps");
      check_finite("--tokens", *o.tokens, 1);
      e.steps = static_cast<int64_t>(std::ceil(*o.tokens / (static_cast<double>(gbs) * base.model.seq_length)));
      tokens_note = "tokens " + report::format_number("%.4g", *o.tokens) + " = " + std::to_string(e.steps) +
                    " steps of " + std::to_string(static_cast<int64_t>(gbs) * base.model.seq_length) +
                    " tokens (global batch x sequence; the last step rounded up)";
    } else {
      if (!o.steps || *o.steps < 1) {
        throw InputError("--steps: required with --objective e2e (training steps of the run, >= 1), or --tokens");
      }
      e.steps = *o.steps;
    }
    e.failures_per_node_day = o.failure_rate.value_or(e.failures_per_node_day);
    e.storage_GBps = o.storage_GBps.value_or(e.storage_GBps);
    e.init_time_s = o.init_time_s.value_or(e.init_time_s);
    check_finite("--failure-rate", e.failures_per_node_day, 0);
    check_finite("--storage-GBps", e.storage_GBps, 1e-9);
    check_finite("--init-time", e.init_time_s, 0);
    po.e2e = e;
  } else if (objective == "step") {
    if (o.failure_rate) throw InputError("--failure-rate: only with --objective e2e");
    if (o.storage_GBps) throw InputError("--storage-GBps: only with --objective e2e");
    if (o.init_time_s) throw InputError("--init-time: only with --objective e2e");
  } else {
    throw InputError("--objective " + o.objective + ": must be step or e2e");
  }
  PlanOutput out;
  out.result = plan::run_planner(catalog::shipped(), base, po, dist);
  if (!tokens_note.empty()) out.result.notes.insert(out.result.notes.begin(), tokens_note);
  if (run_length) {
    out.result.notes.insert(out.result.notes.begin(),
                            std::string(o.tokens ? "--tokens" : "--steps") + ": ranked by the run's end-to-end time "
                            "(objective e2e; at a fixed GPU count the same order as step time), with each plan's "
                            "checkpoint interval, run time and ETTR");
  }
  if (from_file) {
    out.result.notes.insert(out.result.notes.begin(), "the job file's plan section gave the search's framework or "
                                                      "constraints (a flag wins over it for the key it names)");
  }
  if (o.max_tp_per_nvlink_domain > 0) {
    out.result.notes.push_back("TP at most " + std::to_string(o.max_tp_per_nvlink_domain) + " per NVLink domain of " +
                               std::to_string(base.cluster.gpus_per_node) + " GPUs (--max-tp-per-nvlink-domain)");
  }
  if (!dropped.empty()) {
    std::string keys;
    for (const std::string& k : dropped) keys += (keys.empty() ? "training." : ", training.") + k;
    out.result.notes.insert(out.result.notes.begin(), "--framework " + o.framework + ": the job's " + keys +
                                                          " dropped: framework " + o.framework +
                                                          " has no such option and its space decides the rest");
  }
  out.context = plan::ReportContext{base.model.name, base.cluster.gpu, gpus, gbs, po};
  out.json = plan::plan_json(out.result, out.context);
  return out;
}

MemoryMapOutput memory_map(const JobInput& job, int gpus, int64_t global_batch) {
  check_counts(gpus, global_batch);
  const spec::JobSpec base = load_job(job);
  MemoryMapOutput out;
  out.gpus = gpus > 0 ? gpus : base.cluster.num_gpus;
  out.model = base.model.name;
  out.gpu = base.cluster.gpu;
  out.map = plan::memory_map(catalog::shipped().gpus, base, out.gpus, global_batch > 0 ? global_batch : base.training.global_batch_size);
  out.csv = plan::memory_map_csv(out.map);
  return out;
}

std::string plan_report_html(const PlanOptions& flags, const PlanOutput& out) {
  // The map at plan #1's CP, EP, micro-batch, recompute and optimizer (the job's own when no plan was found), TP and
  // PP walked.
  bool from_file = false;
  const PlanOptions o = with_plan_section(flags, &from_file);
  std::vector<std::string> dropped;
  spec::JobSpec base = load_plan_job(o, &dropped);
  const int gpus = out.json.value("gpus", 0);
  const int64_t gbs = out.json.value("global_batch", int64_t{0});
  if (!out.result.plans.empty()) base = plan::job_for(base, out.result.plans.front().plan, gpus, gbs);
  MemoryMapOutput m;
  m.gpus = gpus;
  m.model = base.model.name;
  m.gpu = base.cluster.gpu;
  m.map = plan::memory_map(catalog::shipped().gpus, base, gpus, gbs);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  nlohmann::json cells = nlohmann::json::array();
  for (const plan::MapCell& c : m.map.cells) {
    cells.push_back({{"tensor", c.tensor}, {"pipeline", c.pipeline}, {"data", c.data},
                     {"status", !c.valid ? "invalid" : c.fits() ? "fits" : c.tight() ? "tight" : "over"},
                     {"peak_gib", static_cast<double>(c.peak_bytes) / kGiB},
                     {"headroom_gib", static_cast<double>(c.headroom_bytes) / kGiB}, {"reason", c.reason}});
  }
  const nlohmann::json map = {{"capacity_gib", static_cast<double>(m.map.capacity_bytes) / kGiB},
                              {"settings", m.map.settings}, {"tensors", m.map.tensors},
                              {"pipelines", m.map.pipelines}, {"cells", cells}};
  return report::plan_report_html(out.json, map);
}

std::string plan_text(const PlanOutput& out) { return plan::plan_text(out.result, out.context); }

std::string memory_map_text(const MemoryMapOutput& m) {
  return "stepsim plan --memory-map: " + m.model + " on " + std::to_string(m.gpus) + " x " + m.gpu + "\n" +
         plan::memory_map_text(m.map);
}

}  // namespace stepsim::api
