#include "stepsim/validate/compute_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "stepsim/catalog/efficiency_table.hpp"
#include "stepsim/validate/run_job.hpp"

namespace stepsim::validate {
namespace {

double loss(const std::vector<RunResponse>& runs, double k, double sc, const std::string& skip = "") {
  double sum = 0;
  int n = 0;
  for (const auto& r : runs) {
    if (r.id == skip) continue;
    sum += std::fabs(std::log(r.at(k, sc) / r.measured));
    ++n;
  }
  return n ? sum / n : 0;
}

// Attention scales tried, nearest 1 first, so a flat loss keeps 1.
std::vector<double> scale_grid(bool fit_attention) {
  if (!fit_attention) return {1.0};
  std::vector<double> g;
  for (int i = 30; i <= 200; ++i) g.push_back(i / 100.0);
  std::stable_sort(g.begin(), g.end(), [](double x, double y) { return std::fabs(std::log(x)) < std::fabs(std::log(y)); });
  return g;
}

ClockAndScale fit(const std::vector<RunResponse>& runs, bool fit_attention, const std::string& skip) {
  ClockAndScale best_fit;
  double best = INFINITY;
  for (const double sc : scale_grid(fit_attention)) {
    for (int i = 200; i <= 1500; ++i) {
      const double k = i / 1000.0;
      const double l = loss(runs, k, sc, skip);
      if (l < best - 1e-15) {
        best = l;
        best_fit = {k, sc};
      }
    }
  }
  return best_fit;
}

}  // namespace


hw::KindIntervals kind_intervals(const std::vector<double>& errors, const std::vector<std::string>& kinds,
                                 double all_low, double all_high) {
  hw::KindIntervals out;
  for (const char* kind : hw::kCalibrationKinds) {
    std::vector<double> mine;
    for (size_t i = 0; i < errors.size() && i < kinds.size(); ++i)
      if (kinds[i] == kind) mine.push_back(errors[i]);
    if (mine.empty()) continue;
    hw::KindInterval k;
    k.runs = static_cast<int>(mine.size());
    if (k.runs >= hw::kMinRunsForKindQuantiles) {
      k.low = quantile(mine, 0.1);
      k.high = quantile(mine, 0.9);
    } else {
      k.low = std::min(all_low, *std::min_element(mine.begin(), mine.end()));
      k.high = std::max(all_high, *std::max_element(mine.begin(), mine.end()));
    }
    out[kind] = k;
  }
  return out;
}

ClockAndScale fit_clock_and_scale(const std::vector<RunResponse>& runs, bool fit_attention) {
  return fit(runs, fit_attention, "");
}

double fit_sustained_clock(const std::vector<RunResponse>& runs) { return fit(runs, false, "").sustained_clock; }

ComputeFit fit_compute(const catalog::Catalog& cat, const std::vector<PublishedRun>& all_runs,
                       const ValidationOptions& o) {
  ComputeFit out;
  std::vector<PublishedRun> runs;
  for (const PublishedRun& r : all_runs) {
    // A DeepSpeed row the DeepSpeed profile costs is left out too: its hook time is fitted to those rows.
    if (framework_costed_as_megatron(r.framework)) out.left_out[r.framework].push_back(r.id);
    else runs.push_back(r);
  }
  if (runs.empty()) return out;
  ValidationOptions hi = o, lo = o, att = o;
  hi.overrides.push_back("simulation.sustained_clock=1.0");
  hi.overrides.push_back("simulation.attention_scale=1.0");
  lo.overrides.push_back("simulation.sustained_clock=0.5");
  lo.overrides.push_back("simulation.attention_scale=1.0");
  att.overrides.push_back("simulation.sustained_clock=1.0");
  att.overrides.push_back("simulation.attention_scale=0.5");
  const ValidationResult r1 = validate_runs(cat, runs, hi);
  const ValidationResult r2 = validate_runs(cat, runs, lo);
  const ValidationResult r3 = validate_runs(cat, runs, att);
  out.failed = r1.failed;
  std::map<std::string, const PublishedRun*> by_id;
  for (const auto& r : runs) by_id[r.id] = &r;
  std::map<std::string, std::vector<RunResponse>> by_arch;
  auto find = [](const ValidationResult& r, const std::string& id) -> const RowResult* {
    const auto it = std::find_if(r.rows.begin(), r.rows.end(), [&](const RowResult& y) { return y.id == id; });
    return it == r.rows.end() ? nullptr : &*it;
  };
  for (const auto& x : r1.rows) {
    const RowResult* half_clock = find(r2, x.id);
    const RowResult* half_attention = find(r3, x.id);
    if (!half_clock || !half_attention) continue;
    RunResponse rr;
    rr.id = x.id;
    rr.arch = hw::name_of(gpu_of(cat.gpus, *by_id.at(x.id)).arch);
    rr.kind = x.kind;
    rr.measured = x.measured_step_time_s;
    // T(1, 1) = a + b + c, T(0.5, 1) = a + 2b + 2c, T(1, 0.5) = a + b + 2c. Clamped at 0: an overlap can make a
    // slower kernel hide a little more, which the linear form cannot say.
    const double t11 = x.predicted_step_time_s;
    rr.c = std::max(0.0, half_attention->predicted_step_time_s - t11);
    rr.b = std::max(0.0, half_clock->predicted_step_time_s - t11 - rr.c);
    rr.a = t11 - rr.b - rr.c;
    by_arch[rr.arch].push_back(rr);
  }
  for (auto& [arch, rs] : by_arch) {
    ArchFit f;
    f.arch = arch;
    f.runs = static_cast<int>(rs.size());
    const double current = cat.efficiency.resolve_arch(arch).sustained_clock;
    double attention = 0, total = 0;
    for (const auto& r : rs) {
      attention += r.c;
      total += r.at(1, 1);
    }
    f.attention_fitted = total > 0 && attention / total >= kMinAttentionShare;
    const ClockAndScale cs = fit(rs, f.attention_fitted, "");
    f.sustained_clock = cs.sustained_clock;
    f.attention_scale = cs.attention_scale;
    double attention_after = 0, total_after = 0;
    for (const auto& r : rs) {
      attention_after += r.c / (cs.sustained_clock * cs.attention_scale);
      total_after += r.at(cs.sustained_clock, cs.attention_scale);
    }
    f.attention_share = total_after > 0 ? attention_after / total_after : 0;
    std::vector<double> errs;
    std::vector<std::string> kinds;
    for (const auto& r : rs) {
      kinds.push_back(r.kind);
      const double before = r.at(current) / r.measured - 1;
      const double after = r.at(f.sustained_clock, f.attention_scale) / r.measured - 1;
      f.mape_before += std::fabs(before);
      f.mape_after += std::fabs(after);
      f.mean_signed_after += after;
      errs.push_back(after);
      f.errors.emplace_back(r.id, after);
      // Leave this run out, refit, predict it.
      const ClockAndScale left_out = fit(rs, f.attention_fitted, r.id);
      f.loo_mape += std::fabs(r.at(left_out.sustained_clock, left_out.attention_scale) / r.measured - 1);
    }
    const double n = static_cast<double>(rs.size());
    f.mape_before /= n;
    f.mape_after /= n;
    f.mean_signed_after /= n;
    f.loo_mape /= n;
    f.interval_low = quantile(errs, 0.1);
    f.interval_high = quantile(errs, 0.9);
    f.kind_intervals = kind_intervals(errs, kinds, f.interval_low, f.interval_high);
    out.archs.push_back(std::move(f));
  }
  return out;
}

}  // namespace stepsim::validate
