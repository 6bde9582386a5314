// stepsim validate RUNS.csv: simulates every published run of the CSV and prints predicted vs measured step time,
// the error per row, MAPE per source and overall and the mean signed error (docs/VALIDATION.md). The work is the
// library's (api/validate.hpp); this file parses and prints.
#include <iostream>
#include <memory>

#include "stepsim/io/utf8.hpp"
#include "stepsim/api/validate.hpp"
#include "stepsim/cli/commands.hpp"
#include "stepsim/report/progress_bar.hpp"

namespace stepsim::cli {
namespace {

struct ValidateOptions : api::ValidateOptions {
  std::string json_path, markdown_path, jobs_dir, report_path;
  bool verbose = false;
};

int run_validate(const ValidateOptions& o) {
  report::ProgressBar bar(stderr, report::ProgressBar::mode_for(false));
  api::ValidateOptions lo = o;
  lo.progress = bar.callback();
  const api::ValidateOutput out = api::validate(lo);
  bar.clear();
  std::cout << api::validate_text(out, o.verbose);
  if (!o.json_path.empty()) write_output_file(o.json_path, io::json_text(out.json, 2) + "\n", "validation JSON");
  if (!o.report_path.empty()) write_output_file(o.report_path, api::validate_report_html(o, out), "--report");
  if (!o.markdown_path.empty()) {
    write_output_file(o.markdown_path, api::validation_markdown(out.result, o, o.markdown_path), "validation report (--markdown)");
  }
  if (!o.jobs_dir.empty()) api::write_row_jobs(out.result, o.jobs_dir);
  // A refused row is bad input (its reason is printed with its line): exit 2, so scripts that gate on it notice and
  // exit 1 keeps meaning an internal error.
  return out.result.failed.empty() ? 0 : 2;
}

}  // namespace

Action add_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "simulate published measured runs (CSV) and report the errors");
  cmd->add_option("runs", o->csvs,
                  "published-runs CSV(s) (format of shared/data/published-runs); several are validated as one set")
      ->required();
  cmd->add_option("--json", o->json_path, "write rows, MAPE, mean signed error and failures as JSON here")->check(output_file());
  cmd->add_option("--report", o->report_path, "write an HTML report (predicted against measured, error per source) here")
      ->check(output_file());
  cmd->add_option("--set", o->overrides, "key=value applied to every row's job, e.g. simulation.comm_model=nccl");
  cmd->add_option("--only", o->only, "comma-separated row ids to simulate (default: all)")->delimiter(',');
  cmd->add_option("--markdown", o->markdown_path, "write the report as Markdown here (docs/VALIDATION.md is made this way)")->check(output_file());
  cmd->add_option("--jobs-dir", o->jobs_dir,
                  "write each row's simulated job here as ID.yaml (re-run one with `stepsim simulate DIR/ID.yaml`; characters other than letters, digits, - and _ in ID become _)")
      ->check(output_folder());
  cmd->add_flag("--verbose", o->verbose, "print each row's assumptions and rank 0's breakdown");
  cmd->add_option("--jobs", o->jobs, "rows simulated at once (default: one per hardware thread); the output does not depend on it")
      ->check(whole_number_at_least(0));
  return [cmd, o]() { return cmd->parsed() ? run_validate(*o) : -1; };
}

}  // namespace stepsim::cli
