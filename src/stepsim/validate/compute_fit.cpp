#include "stepsim/validate/compute_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "stepsim/cost/efficiency_table.hpp"
#include "stepsim/validate/run_job.hpp"

namespace stepsim::validate {
namespace {

double loss(const std::vector<RunResponse>& runs, double k, const std::string& skip = "") {
  double sum = 0;
  int n = 0;
  for (const auto& r : runs) {
    if (r.id == skip) continue;
    sum += std::fabs(std::log(r.at(k) / r.measured));
    ++n;
  }
  return n ? sum / n : 0;
}

double fit(const std::vector<RunResponse>& runs, const std::string& skip) {
  double best_k = 1, best = INFINITY;
  for (int i = 200; i <= 1500; ++i) {
    const double k = i / 1000.0;
    const double l = loss(runs, k, skip);
    if (l < best - 1e-15) {
      best = l;
      best_k = k;
    }
  }
  return best_k;
}

}  // namespace

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  const size_t j = std::min(i + 1, v.size() - 1);
  return v[i] + (pos - static_cast<double>(i)) * (v[j] - v[i]);
}

double fit_sustained_clock(const std::vector<RunResponse>& runs) { return fit(runs, ""); }

ComputeFit fit_compute(const std::vector<PublishedRun>& runs, const ValidationOptions& o) {
  ComputeFit out;
  ValidationOptions hi = o, lo = o;
  hi.overrides.push_back("simulation.sustained_clock=1.0");
  lo.overrides.push_back("simulation.sustained_clock=0.5");
  const ValidationResult r1 = validate_runs(runs, hi);
  const ValidationResult r2 = validate_runs(runs, lo);
  out.failed = r1.failed;
  std::map<std::string, const PublishedRun*> by_id;
  for (const auto& r : runs) by_id[r.id] = &r;
  std::map<std::string, std::vector<RunResponse>> by_arch;
  for (const auto& x : r1.rows) {
    const auto it = std::find_if(r2.rows.begin(), r2.rows.end(), [&](const RowResult& y) { return y.id == x.id; });
    if (it == r2.rows.end()) continue;
    RunResponse rr;
    rr.id = x.id;
    rr.arch = gpu_of(*by_id.at(x.id)).arch;
    rr.measured = x.measured_step_time_s;
    // T(1) = a + b, T(0.5) = a + 2b.
    rr.b = it->predicted_step_time_s - x.predicted_step_time_s;
    rr.a = x.predicted_step_time_s - rr.b;
    by_arch[rr.arch].push_back(rr);
  }
  for (auto& [arch, rs] : by_arch) {
    ArchFit f;
    f.arch = arch;
    f.runs = static_cast<int>(rs.size());
    const double current = cost::EfficiencyCatalog::builtin().resolve_arch(arch).sustained_clock;
    f.sustained_clock = fit(rs, "");
    std::vector<double> errs;
    for (const auto& r : rs) {
      const double before = r.at(current) / r.measured - 1;
      const double after = r.at(f.sustained_clock) / r.measured - 1;
      f.mape_before += std::fabs(before);
      f.mape_after += std::fabs(after);
      f.mean_signed_after += after;
      errs.push_back(after);
      f.errors.emplace_back(r.id, after);
      // Leave this run out, refit, predict it.
      const double k = fit(rs, r.id);
      f.loo_mape += std::fabs(r.at(k) / r.measured - 1);
    }
    const double n = static_cast<double>(rs.size());
    f.mape_before /= n;
    f.mape_after /= n;
    f.mean_signed_after /= n;
    f.loo_mape /= n;
    f.interval_low = quantile(errs, 0.1);
    f.interval_high = quantile(errs, 0.9);
    out.archs.push_back(std::move(f));
  }
  return out;
}

}  // namespace stepsim::validate
