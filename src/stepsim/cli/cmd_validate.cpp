// stepsim validate RUNS.csv: simulates every published run of the CSV and prints predicted vs measured step time,
// the error per row, MAPE per source and overall and the mean signed error (docs/VALIDATION.md). The work is the
// library's (api/validate.hpp); this file parses and prints.
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "stepsim/api/validate.hpp"
#include "stepsim/cli/commands.hpp"
#include "stepsim/report/breakdown.hpp"
#include "stepsim/report/progress_bar.hpp"
#include "stepsim/report/summary.hpp"

namespace stepsim::cli {
namespace {

struct ValidateOptions : api::ValidateOptions {
  std::string json_path, markdown_path, jobs_dir, report_path;
  bool verbose = false;
};

std::string to_text(const validate::ValidationResult& r, bool verbose) {
  std::ostringstream os;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-26s %12s %12s %8s %6s %-9s\n", "run", "measured", "predicted", "error", "MFU",
                "recompute");
  os << buf;
  for (const auto& x : r.rows) {
    std::snprintf(buf, sizeof buf, "%-26s %10.3f s %10.3f s %+7.1f%% %5.1f%% %-9s%s\n", x.id.c_str(),
                  x.measured_step_time_s, x.predicted_step_time_s, 100 * x.error, 100 * x.predicted_mfu,
                  x.recompute.c_str(), x.oom ? " (does not fit in memory)" : "");
    os << buf;
    if (verbose) {
      os << "    measured from " << x.measured_from << "\n";
      for (const auto& s : x.stated) os << "    from the row: " << s << "\n";
      for (const auto& a : x.assumptions) os << "    assumed: " << a << "\n";
      for (const auto& n : x.notes) os << "    note: " << n << "\n";
      std::snprintf(buf, sizeof buf, "    rank 0: compute %.3f s, optimizer %.3f s, bubble %.3f s, exposed comm", 
                    x.breakdown.compute_s, x.breakdown.optimizer_s, x.breakdown.pipeline_bubble_s);
      os << buf;
      for (int k = 0; k < report::kNumCommKinds; ++k) {
        std::snprintf(buf, sizeof buf, " %s %.3f s", report::comm_kind_name(k), x.breakdown.exposed_comm_s[static_cast<size_t>(k)]);
        os << buf;
      }
      std::snprintf(buf, sizeof buf, "\n    memory: peak %s of %s per GPU\n",
                    report::format_bytes(static_cast<double>(x.peak_bytes)).c_str(),
                    report::format_bytes(static_cast<double>(x.capacity_bytes)).c_str());
      os << buf;
    }
  }
  os << "\nby source                        rows     MAPE  mean signed error\n";
  for (const auto& [name, s] : r.by_source) {
    std::snprintf(buf, sizeof buf, "  %-30s %4d  %6.1f%%  %+6.1f%%\n", name.c_str(), s.rows, 100 * s.mape,
                  100 * s.mean_signed_error);
    os << buf;
  }
  std::snprintf(buf, sizeof buf, "  %-30s %4zu  %6.1f%%  %+6.1f%%\n", "all", r.rows.size(), 100 * r.mape,
                100 * r.mean_signed_error);
  os << buf;
  os << "\nby architecture and kind         rows  errors 10th..90th percentile  measured inside the 80% interval\n";
  for (const auto& b : r.bands) {
    std::snprintf(buf, sizeof buf, "  %-30s %4d  %+6.1f%% .. %+6.1f%%              %d of %d\n",
                  (b.arch + " " + b.kind).c_str(), b.rows, 100 * b.p10, 100 * b.p90, b.covered, b.with_interval);
    os << buf;
  }
  if (!r.failed.empty()) {
    os << "\n" << r.failed.size() << " row(s) could not be simulated:\n";
    for (const auto& f : r.failed) os << "  " << f.id << " (line " << f.line << "): " << f.message << "\n";
  }
  return os.str();
}

int run_validate(const ValidateOptions& o) {
  report::ProgressBar bar(stderr, report::ProgressBar::terminal());
  api::ValidateOptions lo = o;
  lo.progress = bar.callback();
  const api::ValidateOutput out = api::validate(lo);
  bar.clear();
  const validate::ValidationResult& r = out.result;
  std::cout << to_text(r, o.verbose);
  if (!o.json_path.empty()) write_output_file(o.json_path, out.json.dump(2) + "\n", "validation JSON");
  if (!o.report_path.empty()) write_output_file(o.report_path, api::validate_report_html(o, out), "--report");
  if (!o.markdown_path.empty()) {
    write_output_file(o.markdown_path, api::validation_markdown(r, o, o.markdown_path), "validation report (--markdown)");
  }
  if (!o.jobs_dir.empty()) api::write_row_jobs(r, o.jobs_dir);
  // A refused row makes the command fail, so scripts that gate on it notice.
  return r.failed.empty() ? 0 : 1;
}

}  // namespace

Action add_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "simulate published measured runs (CSV) and report the errors");
  cmd->add_option("runs", o->csv, "published-runs CSV (format of shared/data/published-runs)")->required();
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
  cmd->add_option("--jobs", o->jobs, "rows simulated at once (default: one per hardware thread); the output does not depend on it");
  return [cmd, o]() { return cmd->parsed() ? run_validate(*o) : -1; };
}

}  // namespace stepsim::cli
