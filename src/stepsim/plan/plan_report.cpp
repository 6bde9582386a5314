#include "stepsim/plan/plan_report.hpp"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "stepsim/report/text_format.hpp"

namespace stepsim::plan {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string optimizer_label(const Plan& p) {
  std::string s = p.zero_stage >= 2 ? "zero" + std::to_string(p.zero_stage) : p.distributed_optimizer ? "dist" : "plain";
  if (p.overlap_grad_reduce) s += "+ogr";
  if (p.overlap_param_gather) s += "+opg";
  return s;
}

}  // namespace

size_t fastest_plan(const PlanResult& r) {
  size_t best = 0;
  for (size_t i = 1; i < r.plans.size(); ++i) {
    if (r.plans[i].objective_s < r.plans[best].objective_s) best = i;
  }
  return best;
}

double baseline_gain(const PlanResult& r) {
  if (!r.baseline || r.plans.empty() || r.plans[fastest_plan(r)].objective_s <= 0) return 0;
  return r.baseline->objective_s / r.plans[fastest_plan(r)].objective_s - 1;
}

std::string baseline_line(const PlanResult& r) {
  if (!r.baseline) return "job: " + r.baseline_note;
  const RankedPlan& b = *r.baseline;
  std::string s = "job: the job as written (" + describe(b.plan) + "), " + r.baseline_note;
  if (b.memory_fit == report::MemoryFit::Over) {
    s += "; it does not fit in memory";
  } else if (b.memory_fit == report::MemoryFit::Tight) {
    s += "; it is tight in memory (its allocations fit, its reserved peak does not: docs/MODEL.md §8)";
  }
  if (r.plans.empty()) return s;
  char buf[200];
  const double gain = baseline_gain(r);
  const std::string fastest = "the fastest plan (#" + std::to_string(fastest_plan(r) + 1) + ")";
  if (r.plans.front().plan == b.plan) {
    std::snprintf(buf, sizeof buf, "; it is plan #1");
  } else if (std::fabs(gain) < 0.0005) {
    std::snprintf(buf, sizeof buf, "; it takes as long as %s", fastest.c_str());
  } else if (gain >= 0 && gain <= r.tie_tolerance) {
    std::snprintf(buf, sizeof buf, "; it takes %.1f %% longer than %s, within the model's plan-to-plan error (%.1f %%)",
                  100 * gain, fastest.c_str(), 100 * r.tie_tolerance);
  } else if (gain >= 0) {
    std::snprintf(buf, sizeof buf, "; it takes %.1f %% longer than %s", 100 * gain, fastest.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "; it is %.1f %% faster than %s (outside the space searched)", -100 * gain,
                  fastest.c_str());
  }
  return s + buf;
}

std::string ties_line(const PlanResult& r) {
  std::string groups;
  for (size_t i = 0; i < r.plans.size();) {
    size_t j = i;
    while (j + 1 < r.plans.size() && r.plans[j + 1].tie_group == r.plans[i].tie_group) ++j;
    if (j > i) groups += (groups.empty() ? "#" : ", #") + std::to_string(i + 1) + "-#" + std::to_string(j + 1);
    i = j + 1;
  }
  if (r.tie_tolerance <= 0) return "ties: not grouped (--tie-tolerance 0)";
  char buf[96];
  std::snprintf(buf, sizeof buf, "ties (plans within %.1f %% of their group's first): ", 100 * r.tie_tolerance);
  return buf + (groups.empty() ? std::string("none")
                               : groups + ", each ordered by the simpler layout, then memory headroom (notes: ties)");
}

std::string plan_text(const PlanResult& r, const ReportContext& c) {
  const bool e2e = c.options.objective == Objective::E2E;
  const bool price = c.options.price_per_gpu_hour > 0;
  std::ostringstream o;
  o << "stepsim plan: " << c.model << " on " << c.gpus << " x " << c.gpu << ", global batch " << c.global_batch
    << ", objective " << (e2e ? "end-to-end time (MoFa eq. 43)" : "step time") << ", GPU memory "
    << std::fixed << std::setprecision(2) << static_cast<double>(r.capacity_bytes) / kGiB << " GiB\n";
  if (r.plans.empty()) {
    o << "\n  no feasible plan\n";
  } else {
    char buf[512];
    o << "\n";
    std::snprintf(buf, sizeof buf, "  %3s %3s %3s %5s %3s %3s %3s %2s %-9s %-14s %-16s %10s %11s %10s %10s %9s %9s %9s %9s %-8s",
                  "#", "TP", "PP", "DP", "CP", "EP", "mbs", "VP", "recompute", "optimizer", "layout", "step", "TFLOP/s/GPU",
                  "peak mem", "compute", "TP comm", "PP", "DP", "update", "timed by");
    o << buf;
    if (e2e) {
      std::snprintf(buf, sizeof buf, " %10s %10s %7s", "ckpt every", "E2E", "ETTR");
      o << buf;
    }
    if (price) o << (e2e ? "        run cost" : "       step cost");
    o << "\n";
    auto row = [&](const std::string& label, const RankedPlan& p) {
      const Plan& x = p.plan;
      std::snprintf(buf, sizeof buf,
                    "  %3s %3d %3d %5d %3d %3d %3d %2d %-9s %-14s %-16s %8.3f s %11.1f %6.2f GiB %8.3f s %7.3f s %7.3f s "
                    "%7.3f s %7.3f s %-8s",
                    label.c_str(), x.tensor, x.pipeline, x.data, x.context, x.expert, x.micro_batch_size,
                    x.virtual_stages, spec::name_of(x.recompute), optimizer_label(x).c_str(), layout_label(x).c_str(),
                    p.step_time_s, p.tflops_per_gpu,
                    static_cast<double>(p.peak_memory_bytes) / kGiB, p.stages.compute_s,
                    p.stages.tp_s + p.stages.cp_s + p.stages.ep_s, p.stages.pp_s, p.stages.dp_s, p.stages.update_s,
                    p.simulated ? "engine" : "estimate");
      o << buf;
      if (e2e) {
        if (std::isfinite(p.e2e_time_s)) {
          std::snprintf(buf, sizeof buf, " %4lld steps %6.2f d %6.2f %%", static_cast<long long>(p.checkpoint_interval),
                        p.e2e_time_s / 86400.0, 100 * p.ettr);
        } else {
          std::snprintf(buf, sizeof buf, " %10s %10s %7s", "-", "never", "-");
        }
        o << buf;
      }
      if (price) {
        std::snprintf(buf, sizeof buf, " %15s", report::format_usd(p.cost_usd).c_str());
        o << buf;
      }
      if (p.memory_fit == report::MemoryFit::Over) o << "  does not fit";
      else if (p.memory_fit == report::MemoryFit::Tight) o << "  tight (memory at risk)";
      else if (p.memory_at_risk) o << "  memory at risk";
      if (p.host_bound_step_time_s > 0) {
        std::snprintf(buf, sizeof buf, "  host-bound up to %.3f s", p.host_bound_step_time_s);
        o << buf;
      }
      o << "\n";
    };
    int i = 0;
    for (const RankedPlan& p : r.plans) row(std::to_string(++i), p);
    if (r.baseline) row("job", *r.baseline);
    o << "  (TP comm: exposed TP + CP + EP communication; PP: bubble + exposed sends; per step, on the slowest stage"
         " (estimate) or rank 0 (engine))\n";
  }
  if (!r.plans.empty()) o << "  " << ties_line(r) << "\n";
  o << "  " << baseline_line(r) << "\n";
  o << "\nnotes:\n";
  for (const std::string& n : r.notes) o << "  - " << n << "\n";
  return o.str();
}

namespace {

nlohmann::json plan_row_json(const RankedPlan& p, const ReportContext& c, int64_t capacity) {
  using nlohmann::json;
  const Plan& x = p.plan;
  json j = {{"tensor", x.tensor},
            {"tie_group", p.tie_group},
            {"optimizer", optimizer_label(x)},
            {"layout", layout_label(x)},
            {"pipeline", x.pipeline},
            {"data", x.data},
            {"context", x.context},
            {"expert", x.expert},
            {"micro_batch_size", x.micro_batch_size},
            {"virtual_stages", x.virtual_stages},
            {"recompute", spec::name_of(x.recompute)},
            {"step_time_s", p.step_time_s},
            {"tflops_per_gpu", p.tflops_per_gpu},
            {"peak_memory_bytes", p.peak_memory_bytes},
            {"distributed_optimizer", x.distributed_optimizer},
            {"zero_stage", x.zero_stage > 0 ? x.zero_stage : (x.distributed_optimizer ? 1 : 0)},
            {"overlap_grad_reduce", x.overlap_grad_reduce},
            {"overlap_param_gather", x.overlap_param_gather},
            {"tp_comm_overlap", x.tp_comm_overlap},
            {"cp_comm_type", spec::name_of(x.cp_comm_type)},
            {"hierarchical_context_parallel_sizes",
             x.cp_comm_type == spec::CpCommType::A2AP2P && x.cp_a2a > 0 ? json::array({x.cp_a2a, x.context / x.cp_a2a})
                                                                        : json()},
            {"expert_tensor", x.expert_tensor > 0 ? x.expert_tensor : x.tensor},
            {"overlap_moe_expert_parallel_comm", x.ep_overlap},
            {"fp8_recipe", x.fp8_recipe >= 0 ? json(spec::name_of(static_cast<spec::Fp8Recipe>(x.fp8_recipe))) : json()},
            {"timed_by", p.simulated ? "engine" : "estimate"},
            {"memory_at_risk", p.memory_at_risk},
            {"estimated_step_time_s", p.estimate.step_time_s},
            {"estimated_peak_memory_bytes", p.estimate.peak_memory_bytes},
            {"fits", p.memory_fit != report::MemoryFit::Over},
            {"memory_tight", p.memory_fit == report::MemoryFit::Tight},
            {"memory_headroom_bytes", capacity - p.peak_memory_bytes},
            {"compute_s", p.stages.compute_s},
            {"tp_s", p.stages.tp_s},
            {"cp_s", p.stages.cp_s},
            {"ep_s", p.stages.ep_s},
            {"pp_s", p.stages.pp_s},
            {"dp_s", p.stages.dp_s},
            {"update_s", p.stages.update_s},
            {"host_s", p.stages.host_s}};
  if (c.options.objective == Objective::E2E) {
    j["checkpoint_interval_steps"] = p.checkpoint_interval;
    j["e2e_time_s"] = std::isfinite(p.e2e_time_s) ? json(p.e2e_time_s) : json(nullptr);
    j["ettr"] = p.ettr;
  }
  if (c.options.price_per_gpu_hour > 0) j["cost_usd"] = p.cost_usd;
  if (p.host_bound_step_time_s > 0) j["host_bound_step_time_s"] = p.host_bound_step_time_s;
  return j;
}

}  // namespace

nlohmann::json plan_json(const PlanResult& r, const ReportContext& c) {
  using nlohmann::json;
  json plans = json::array();
  for (const RankedPlan& p : r.plans) plans.push_back(plan_row_json(p, c, r.capacity_bytes));
  json pruning = json::object();
  for (int k = 0; k < kNumRules; ++k) pruning[rule_name(static_cast<Rule>(k))] = r.removed[k];
  json out = {{"model", c.model},
              {"gpu", c.gpu},
              {"gpus", c.gpus},
              {"global_batch", c.global_batch},
              {"objective", c.options.objective == Objective::E2E ? "e2e" : "step"},
              {"framework", spec::name_of(c.options.space.framework)},
              {"constraints", c.options.space.constraints.user.describe()},
              {"capacity_bytes", r.capacity_bytes},
              {"enumerated", r.enumerated},
              {"estimated", r.estimated},
              {"fits", r.fits},
              {"simulated", r.simulated},
              {"pruning", pruning},
              {"plans", plans},
              {"baseline", r.baseline ? plan_row_json(*r.baseline, c, r.capacity_bytes) : json(nullptr)},
              {"baseline_note", r.baseline_note},
              {"tie_tolerance", r.tie_tolerance},
              {"notes", r.notes}};
  if (r.baseline && !r.plans.empty()) out["baseline"]["longer_than_best"] = baseline_gain(r);
  if (c.options.objective == Objective::E2E) {
    out["steps"] = c.options.e2e.steps;
    out["checkpoint_save_s"] = r.checkpoint_save_s;
  }
  if (c.options.price_per_gpu_hour > 0) {
    out["price_usd_per_gpu_hour"] = c.options.price_per_gpu_hour;
    out["cost_basis"] = c.options.objective == Objective::E2E ? "whole run" : "one step";
  }
  return out;
}

}  // namespace stepsim::plan
