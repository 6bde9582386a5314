// stepsim calibrate compute --runs RUNS.csv: fits the sustained tensor-core clock of each GPU architecture in the
// runs, prints the fit with in-sample and leave-one-out errors, and writes it to the calibration store that later
// simulations read (docs/CALIBRATION.md, "Compute").
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "stepsim/cli/commands.hpp"
#include "stepsim/api/calibrate_compute.hpp"
#include "stepsim/validate/compute_fit.hpp"
#include "stepsim/validate/published_run.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::cli {
namespace {

struct CalibrateComputeOptions {
  std::string runs, store, json_path;
  std::vector<std::string> exclude;
  std::vector<std::string> overrides;
  bool dry_run = false;
};


int run_calibrate_compute(const CalibrateComputeOptions& o) {
  const auto runs = validate::read_published_runs(o.runs);
  validate::ValidationOptions vo;
  vo.overrides = o.overrides;
  vo.exclude_ids = o.exclude;
  const validate::ComputeFit fit = validate::fit_compute(catalog::shipped(), runs, vo);
  char buf[256];
  std::cout << "sustained tensor-core clock k and attention-kernel scale s per architecture (step = a + b/k + c/(k s) "
               "per run, minimising mean |log error|; s fitted where attention kernels are >= "
            << static_cast<int>(100 * validate::kMinAttentionShare) << "% of the runs' time)\n";
  std::snprintf(buf, sizeof buf, "  %-10s %5s %9s %9s %10s %12s %12s %12s %10s  %s\n", "arch", "runs", "clock",
                "attn x", "attn time", "MAPE before", "MAPE after", "leave-1-out", "signed", "80% of errors");
  std::cout << buf;
  nlohmann::json j = nlohmann::json::array();
  for (const auto& a : fit.archs) {
    char scale[32];
    std::snprintf(scale, sizeof scale, a.attention_fitted ? "%.2f" : "1 (kept)", a.attention_scale);
    std::snprintf(buf, sizeof buf, "  %-10s %5d %9.3f %9s %9.1f%% %11.1f%% %11.1f%% %11.1f%% %+9.1f%%  %+.1f%% .. %+.1f%%\n",
                  a.arch.c_str(), a.runs, a.sustained_clock, scale, 100 * a.attention_share, 100 * a.mape_before,
                  100 * a.mape_after, 100 * a.loo_mape, 100 * a.mean_signed_after, 100 * a.interval_low,
                  100 * a.interval_high);
    std::cout << buf;
    nlohmann::json kinds = nlohmann::json::object();
    for (const auto& [kind, k] : a.kind_intervals) {
      const bool own = k.runs >= hw::kMinRunsForKindQuantiles;
      std::snprintf(buf, sizeof buf, "  %-10s   %s: %d run%s, %s %+.1f%% .. %+.1f%%\n", "", kind.c_str(), k.runs,
                    k.runs == 1 ? "" : "s", own ? "80% of errors" : "the band above widened to cover them:",
                    100 * k.low, 100 * k.high);
      std::cout << buf;
      kinds[kind] = {{"runs", k.runs}, {"prediction_interval", {k.low, k.high}}};
    }
    nlohmann::json errors = nlohmann::json::object();
    for (const auto& [id, e] : a.errors) errors[id] = e;
    j.push_back({{"arch", a.arch}, {"runs", a.runs}, {"sustained_clock", a.sustained_clock},
                 {"attention_scale", a.attention_scale}, {"attention_fitted", a.attention_fitted},
                 {"attention_share", a.attention_share},
                 {"mape_before", a.mape_before}, {"mape_after", a.mape_after}, {"loo_mape", a.loo_mape},
                 {"mean_signed_error_after", a.mean_signed_after},
                 {"prediction_interval", {a.interval_low, a.interval_high}},
                 {"prediction_interval_by_kind", kinds}, {"errors", errors}});
  }
  for (const auto& f : fit.failed) std::cout << "  not used: " << f.id << " (line " << f.line << "): " << f.message << "\n";
  if (!o.json_path.empty()) write_output_file(o.json_path, nlohmann::json{{"archs", j}}.dump(2) + "\n", "calibration JSON");
  if (o.dry_run || fit.archs.empty()) return fit.archs.empty() ? 1 : 0;
  const std::string path = api::store_compute_fit(fit, o.runs, o.store, utc_now_iso());
  std::cout << "stored in " << path << " (simulations of these architectures use it unless simulation.calibration_store is none)\n";
  return 0;
}

}  // namespace

std::function<int()> add_calibrate_compute(CLI::App& calibrate) {
  auto o = std::make_shared<CalibrateComputeOptions>();
  CLI::App* cmd = calibrate.add_subcommand("compute", "fit the compute model's sustained clock and attention-kernel scale per GPU architecture to measured runs");
  cmd->add_option("--runs", o->runs, "published-runs CSV (format of shared/data/published-runs)")->required();
  cmd->add_option("--store", o->store, "calibration store (default: $STEPSIM_CALIBRATION_DB, else ~/.cache/stepsim/calibration.sqlite)");
  cmd->add_option("--set", o->overrides, "key=value applied to every run's job");
  cmd->add_option("--json", o->json_path, "write the fit (per architecture, per run errors) as JSON here")->check(output_file());
  cmd->add_option("--exclude", o->exclude, "comma-separated run ids left out of the fit (say why in your notes)")
      ->delimiter(',');
  cmd->add_flag("--dry-run", o->dry_run, "fit and print, store nothing");
  return [cmd, o]() { return cmd->parsed() ? run_calibrate_compute(*o) : -1; };
}

}  // namespace stepsim::cli
