// stepsim validate RUNS.csv: simulates every published run of the CSV and prints predicted vs measured step time,
// the error per row, MAPE per source and overall and the mean signed error (docs/VALIDATION.md).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stepsim/cli/commands.hpp"
#include "stepsim/report/breakdown.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/validate/published_run.hpp"
#include "stepsim/validate/validation.hpp"

namespace stepsim::cli {
namespace {

struct ValidateOptions {
  std::string csv, json_path, markdown_path, jobs_dir;
  std::vector<std::string> only;
  std::vector<std::string> overrides;
  bool verbose = false;
  unsigned jobs = 0;
};

nlohmann::json to_json(const validate::ValidationResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& x : r.rows) {
    nlohmann::json b = {{"compute_s", x.breakdown.compute_s},
                        {"optimizer_s", x.breakdown.optimizer_s},
                        {"pipeline_bubble_s", x.breakdown.pipeline_bubble_s}};
    for (int k = 0; k < report::kNumCommKinds; ++k) {
      b[std::string(report::comm_kind_name(k)) + "_exposed_s"] = x.breakdown.exposed_comm_s[static_cast<size_t>(k)];
    }
    rows.push_back({{"id", x.id},
                    {"source", x.source},
                    {"measured_step_time_s", x.measured_step_time_s},
                    {"measured_from", x.measured_from},
                    {"predicted_step_time_s", x.predicted_step_time_s},
                    {"error", x.error},
                    {"predicted_mfu", x.predicted_mfu},
                    {"recompute", x.recompute},
                    {"oom", x.oom},
                    {"peak_memory_bytes", x.peak_bytes},
                    {"capacity_bytes", x.capacity_bytes},
                    {"breakdown_s", b},
                    {"assumptions", x.assumptions}});
  }
  nlohmann::json failed = nlohmann::json::array();
  for (const auto& f : r.failed) failed.push_back({{"id", f.id}, {"line", f.line}, {"message", f.message}});
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& [name, s] : r.by_source) {
    sources[name] = {{"rows", s.rows}, {"mape", s.mape}, {"mean_signed_error", s.mean_signed_error}};
  }
  return {{"rows", rows}, {"mape", r.mape}, {"mean_signed_error", r.mean_signed_error}, {"by_source", sources},
          {"failed", failed}};
}

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
      for (const auto& a : x.assumptions) os << "    assumed: " << a << "\n";
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
  if (!r.failed.empty()) {
    os << "\n" << r.failed.size() << " row(s) could not be simulated:\n";
    for (const auto& f : r.failed) os << "  " << f.id << " (line " << f.line << "): " << f.message << "\n";
  }
  return os.str();
}

// docs/VALIDATION.md is this text: every figure in it comes from the command it names.
std::string to_markdown(const validate::ValidationResult& r, const ValidateOptions& o) {
  std::ostringstream os;
  char buf[512];
  os << "# Validation of step-time predictions against published runs\n\n"
     << "Generated by `stepsim validate " << o.csv << " --markdown " << o.markdown_path << "`"
     << (o.overrides.empty() ? "" : " with --set overrides") << "; do not edit by hand. Errors are (predicted - measured) / "
     << "measured: negative means stepsim predicts a faster step. TFLOP/s figures are turned into step times with each "
     << "source's FLOP convention; what a source leaves unstated is filled by the rules of docs/VALIDATION-RULES.md and "
     << "listed per row with `--verbose`.\n\n";
  std::snprintf(buf, sizeof buf, "**%zu runs simulated, %zu refused. MAPE %.1f %%, mean signed error %+.1f %%.**\n\n",
                r.rows.size(), r.failed.size(), 100 * r.mape, 100 * r.mean_signed_error);
  os << buf;
  os << "| source | runs | MAPE | mean signed error |\n| --- | ---: | ---: | ---: |\n";
  for (const auto& [name, s] : r.by_source) {
    std::snprintf(buf, sizeof buf, "| %s | %d | %.1f %% | %+.1f %% |\n", name.c_str(), s.rows, 100 * s.mape,
                  100 * s.mean_signed_error);
    os << buf;
  }
  os << "\n| run | measured (s) | predicted (s) | error | predicted MFU | recompute | measured from |\n"
     << "| --- | ---: | ---: | ---: | ---: | --- | --- |\n";
  for (const auto& x : r.rows) {
    std::snprintf(buf, sizeof buf, "| %s | %.3f | %.3f | %+.1f %% | %.1f %% | %s%s | %s |\n", x.id.c_str(),
                  x.measured_step_time_s, x.predicted_step_time_s, 100 * x.error, 100 * x.predicted_mfu,
                  x.recompute.c_str(), x.oom ? " (OOM)" : "", x.measured_from.c_str());
    os << buf;
  }
  if (!r.failed.empty()) {
    os << "\nRefused:\n\n";
    for (const auto& f : r.failed) os << "- " << f.id << ": " << f.message << "\n";
  }
  return os.str();
}

int run_validate(const ValidateOptions& o) {
  const std::vector<validate::PublishedRun> runs = validate::read_published_runs(o.csv);
  validate::ValidationOptions vo;
  vo.overrides = o.overrides;
  vo.only_ids = o.only;
  vo.threads = o.jobs;
  const validate::ValidationResult r = validate::validate_runs(runs, vo);
  std::cout << to_text(r, o.verbose);
  if (!o.json_path.empty()) write_output_file(o.json_path, to_json(r).dump(2) + "\n", "validation JSON");
  if (!o.markdown_path.empty()) write_output_file(o.markdown_path, to_markdown(r, o), "validation report (--markdown)");
  if (!o.jobs_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.jobs_dir, ec);  // a failure shows in the first write's message
    for (const auto& x : r.rows) {
      // The row id names the file; characters a path would read (/, .., spaces) become '_'.
      std::string name = x.id;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
      }
      write_output_file(o.jobs_dir + "/" + name + ".yaml", x.job_yaml, "row job (--jobs-dir)");
    }
  }
  // A refused row makes the command fail, so scripts that gate on it notice.
  return r.failed.empty() ? 0 : 1;
}

}  // namespace

Action add_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "simulate published measured runs (CSV) and report the errors");
  cmd->add_option("runs", o->csv, "published-runs CSV (format of shared/data/published-runs)")->required();
  cmd->add_option("--json", o->json_path, "write rows, MAPE, mean signed error and failures as JSON here")->check(output_file());
  cmd->add_option("--set", o->overrides, "key=value applied to every row's job, e.g. simulation.comm_model=nccl");
  cmd->add_option("--only", o->only, "comma-separated row ids to simulate (default: all)")->delimiter(',');
  cmd->add_option("--markdown", o->markdown_path, "write the report as Markdown here (docs/VALIDATION.md is made this way)")->check(output_file());
  cmd->add_option("--jobs-dir", o->jobs_dir,
                  "write each row's simulated job here as ID.yaml (re-run one with `stepsim simulate DIR/ID.yaml`; characters other than letters, digits, - and _ in ID become _)");
  cmd->add_flag("--verbose", o->verbose, "print each row's assumptions and rank 0's breakdown");
  cmd->add_option("--jobs", o->jobs, "rows simulated at once (default: one per hardware thread); the output does not depend on it");
  return [cmd, o]() { return cmd->parsed() ? run_validate(*o) : -1; };
}

}  // namespace stepsim::cli
