// stepsim calibrate compute --runs RUNS.csv: fits the sustained tensor-core clock of each GPU architecture in the
// runs, prints the fit with in-sample and leave-one-out errors, and writes it to the calibration store that later
// simulations read (docs/CALIBRATION.md, "Compute").
#include <iostream>
#include <memory>

#include "stepsim/io/utf8.hpp"
#include "stepsim/api/calibrate_compute.hpp"
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {
namespace {

struct CalibrateComputeArgs {
  api::CalibrateComputeOptions opt;
  std::string json_path;
};

int run_calibrate_compute(const CalibrateComputeArgs& a) {
  const api::CalibrateComputeOutput out = api::calibrate_compute(a.opt, utc_now_iso());
  std::cout << out.text;
  if (!a.json_path.empty()) write_output_file(a.json_path, io::json_text(out.json, 2) + "\n", "calibration JSON");
  if (out.fit.archs.empty()) return 1;
  if (!out.store_path.empty()) {
    std::string undo;
    for (const auto& a : out.fit.archs) undo += " --compute " + a.arch;
    std::cout << "stored in " << out.store_path
              << " (simulations of these architectures use it unless simulation.calibration_store is none; "
              << "stepsim calibrate remove" << undo << " --store " << out.store_path << " undoes this)\n";
  }
  return 0;
}

}  // namespace

std::function<int()> add_calibrate_compute(CLI::App& calibrate) {
  auto o = std::make_shared<CalibrateComputeArgs>();
  CLI::App* cmd = calibrate.add_subcommand("compute", "fit the compute model's sustained clock and attention-kernel scale per GPU architecture to measured runs");
  cmd->add_option("--runs", o->opt.runs, "published-runs CSV (format of shared/data/published-runs)")->required();
  cmd->add_option("--store", o->opt.store, "calibration store (default: $STEPSIM_CALIBRATION_DB, else ~/.cache/stepsim/calibration.sqlite)");
  cmd->add_option("--set", o->opt.overrides, "key=value applied to every run's job");
  cmd->add_option("--json", o->json_path, "write the fit (per architecture, per run errors) as JSON here")->check(output_file());
  cmd->add_option("--exclude", o->opt.exclude, "comma-separated run ids left out of the fit (say why in your notes)")
      ->delimiter(',');
  cmd->add_flag("--dry-run", o->opt.dry_run, "fit and print, store nothing");
  return [cmd, o]() { return cmd->parsed() ? run_calibrate_compute(*o) : -1; };
}

}  // namespace stepsim::cli
