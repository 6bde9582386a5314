#include "stepsim/api/calibrate_compute.hpp"

#include <cstdio>
#include <sstream>

#include "stepsim/calibrate/calibration_store.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/validate/published_run.hpp"

namespace stepsim::api {
namespace {

// One compute_calibration row per fitted architecture (clock, attention scale, errors, the prediction band over all
// runs and per kind of job); returns the store's path.
std::string store_compute_fit(const validate::ComputeFit& fit, const std::string& runs_path, const std::string& store,
                              const std::string& created) {
  const std::string path = store.empty() ? hw::default_calibration_store_path() : store;
  hw::CalibrationStore s = hw::CalibrationStore::open(path);
  for (const auto& a : fit.archs) {
    hw::ComputeCalibrationRow row;
    row.arch = a.arch;
    row.sustained_clock = a.sustained_clock;
    row.attention_scale = a.attention_scale;
    row.runs = a.runs;
    row.mape_pct = 100 * a.mape_after;
    row.loo_mape_pct = 100 * a.loo_mape;
    row.interval_low = a.interval_low;
    row.interval_high = a.interval_high;
    row.kind_intervals = a.kind_intervals;
    row.source = runs_path;
    row.created = created;
    s.insert_compute(row);
  }
  return path;
}

nlohmann::json arch_json(const validate::ArchFit& a) {
  nlohmann::json kinds = nlohmann::json::object();
  for (const auto& [kind, k] : a.kind_intervals) kinds[kind] = {{"runs", k.runs}, {"prediction_interval", {k.low, k.high}}};
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& [id, e] : a.errors) errors[id] = e;
  return {{"arch", a.arch}, {"runs", a.runs}, {"sustained_clock", a.sustained_clock},
          {"attention_scale", a.attention_scale}, {"attention_fitted", a.attention_fitted},
          {"attention_share", a.attention_share},
          {"mape_before", a.mape_before}, {"mape_after", a.mape_after}, {"loo_mape", a.loo_mape},
          {"mean_signed_error_after", a.mean_signed_after},
          {"prediction_interval", {a.interval_low, a.interval_high}},
          {"prediction_interval_by_kind", kinds}, {"errors", errors}};
}

std::string arch_text(const validate::ArchFit& a) {
  char buf[256];
  char scale[32];
  std::snprintf(scale, sizeof scale, a.attention_fitted ? "%.2f" : "1 (kept)", a.attention_scale);
  std::snprintf(buf, sizeof buf, "  %-10s %5d %9.3f %9s %9.1f%% %11.1f%% %11.1f%% %11.1f%% %+9.1f%%  %+.1f%% .. %+.1f%%\n",
                a.arch.c_str(), a.runs, a.sustained_clock, scale, 100 * a.attention_share, 100 * a.mape_before,
                100 * a.mape_after, 100 * a.loo_mape, 100 * a.mean_signed_after, 100 * a.interval_low,
                100 * a.interval_high);
  std::string t = buf;
  for (const auto& [kind, k] : a.kind_intervals) {
    const bool own = k.runs >= hw::kMinRunsForKindQuantiles;
    std::snprintf(buf, sizeof buf, "  %-10s   %s: %d run%s, %s %+.1f%% .. %+.1f%%\n", "", kind.c_str(), k.runs,
                  k.runs == 1 ? "" : "s", own ? "80% of errors" : "the band above widened to cover them:", 100 * k.low,
                  100 * k.high);
    t += buf;
  }
  return t;
}

std::string fit_text(const validate::ComputeFit& fit) {
  std::ostringstream t;
  t << "sustained tensor-core clock k and attention-kernel scale s per architecture (step = a + b/k + c/(k s) "
       "per run, minimising mean |log error|; s fitted where attention kernels are >= "
    << static_cast<int>(100 * validate::kMinAttentionShare) << "% of the runs' time)\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-10s %5s %9s %9s %10s %12s %12s %12s %10s  %s\n", "arch", "runs", "clock",
                "attn x", "attn time", "MAPE before", "MAPE after", "leave-1-out", "signed", "80% of errors");
  t << buf;
  for (const auto& a : fit.archs) t << arch_text(a);
  for (const auto& f : fit.failed) t << "  not used: " << f.id << " (line " << f.line << "): " << f.message << "\n";
  for (const auto& [framework, ids] : fit.left_out) {
    t << "  not used: " << ids.size() << " run" << (ids.size() == 1 ? "" : "s") << " of framework " << framework
      << ", costed as Megatron-Core's (its own engine's costs are not modelled, so they would be fitted into the "
         "clock):";
    for (const std::string& id : ids) t << " " << id;
    t << "\n";
  }
  return t.str();
}

}  // namespace

CalibrateComputeOutput calibrate_compute(const CalibrateComputeOptions& o, const std::string& created) {
  const auto runs = validate::read_published_runs(o.runs);
  validate::ValidationOptions vo;
  vo.overrides = o.overrides;
  vo.exclude_ids = o.exclude;
  CalibrateComputeOutput out;
  out.fit = validate::fit_compute(catalog::shipped(), runs, vo);
  out.text = fit_text(out.fit);
  out.json = {{"archs", nlohmann::json::array()}};
  for (const auto& a : out.fit.archs) out.json["archs"].push_back(arch_json(a));
  out.json["left_out_by_framework"] = out.fit.left_out;
  if (!o.dry_run && !out.fit.archs.empty()) out.store_path = store_compute_fit(out.fit, o.runs, o.store, created);
  return out;
}

}  // namespace stepsim::api
