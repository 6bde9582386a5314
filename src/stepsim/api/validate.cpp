#include "stepsim/api/validate.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "stepsim/api/output_file.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/report/breakdown.hpp"
#include "stepsim/report/command_reports.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/validate/published_run.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::api {
namespace {

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
                    {"memory_tight", x.memory_tight},
                    {"peak_memory_bytes", x.peak_bytes},
                    {"capacity_bytes", x.capacity_bytes},
                    {"breakdown_s", b},
                    {"assumptions", x.assumptions},
                    {"stated", x.stated},
                    {"notes", x.notes},
                    {"arch", x.arch},
                    {"kind", x.kind},
                    {"framework", x.framework},
                    {"gpu", x.gpu}});
    rows.back()["predicted_peak_reserved_bytes"] = x.predicted_reserved_bytes;
    if (x.measured_memory_bytes) {
      rows.back()["measured_peak_memory_bytes"] = *x.measured_memory_bytes;
      rows.back()["measured_peak_memory_from"] = x.memory_from;
      rows.back()["memory_error"] = x.memory_error;
    }
    if (x.interval_s) {
      rows.back()["predicted_interval_s"] = {(*x.interval_s)[0], (*x.interval_s)[1]};
      rows.back()["measured_inside_interval"] = x.covered();
    }
  }
  nlohmann::json bands = nlohmann::json::array();
  for (const auto& b : r.bands) {
    bands.push_back({{"arch", b.arch}, {"kind", b.kind}, {"rows", b.rows}, {"error_p10", b.p10}, {"error_p90", b.p90},
                     {"rows_with_interval", b.with_interval}, {"measured_inside_interval", b.covered}});
  }
  nlohmann::json framework_bands = nlohmann::json::array();
  for (const auto& b : r.framework_bands) {
    framework_bands.push_back({{"arch", b.arch}, {"framework", b.kind}, {"rows", b.rows}, {"error_p10", b.p10},
                               {"error_p90", b.p90}, {"rows_with_interval", b.with_interval},
                               {"measured_inside_interval", b.covered}});
  }
  nlohmann::json failed = nlohmann::json::array();
  for (const auto& f : r.failed) failed.push_back({{"id", f.id}, {"line", f.line}, {"message", f.message}});
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& [name, s] : r.by_source) {
    sources[name] = {{"rows", s.rows}, {"mape", s.mape}, {"mean_signed_error", s.mean_signed_error}};
  }
  nlohmann::json frameworks = nlohmann::json::array();
  for (const auto& [key, s] : r.by_framework_gpu) {
    frameworks.push_back({{"framework", key.first}, {"gpu", key.second}, {"rows", s.rows}, {"mape", s.mape},
                          {"mean_signed_error", s.mean_signed_error}});
  }
  const validate::SourceWeightedBand& a = r.all_sources;
  const nlohmann::json all_sources = {{"sources", a.sources}, {"rows", a.rows}, {"error_p10", a.p10},
                                      {"error_p90", a.p90}, {"rows_with_interval", a.with_interval},
                                      {"measured_inside_interval", a.covered}};
  return {{"rows", rows}, {"mape", r.mape}, {"mean_signed_error", r.mean_signed_error}, {"all_sources", all_sources},
          {"by_source", sources},
          {"by_framework_gpu", frameworks}, {"by_kind", bands}, {"by_framework_arch", framework_bands},
          {"failed", failed},
          {"memory",
           {{"rows", r.memory.rows}, {"mape", r.memory.mape}, {"mean_signed_error", r.memory.mean_signed_error},
                      {"error_p10", r.memory_p10}, {"error_p90", r.memory_p90},
                      {"within_10_percent", r.memory_within_10_percent}, {"predicted_not_to_fit", r.not_fit},
                      {"predicted_tight", r.tight}}}};
}

}  // namespace

std::string runs_files(const ValidateOptions& o) {
  std::string out;
  for (const std::string& f : o.csvs) out += (out.empty() ? "" : " ") + f;
  return out;
}

ValidateOutput validate(const ValidateOptions& o) {
  if (o.csvs.empty()) throw InputError("validate: no runs CSV given");
  std::vector<validate::PublishedRun> runs;
  std::map<std::string, std::string> file_of;  // row id -> the file it came from
  for (const std::string& csv : o.csvs) {
    for (validate::PublishedRun& run : validate::read_published_runs(csv)) {
      const auto [it, fresh] = file_of.emplace(run.id, csv);
      if (!fresh) {
        throw InputError(csv + ": line " + std::to_string(run.line) + ": row id '" + run.id + "' is also in " +
                         it->second + " (ids must be unique across the files validated together)");
      }
      runs.push_back(std::move(run));
    }
  }
  validate::ValidationOptions vo;
  vo.overrides = o.overrides;
  vo.only_ids = o.only;
  vo.threads = o.jobs;
  vo.progress = o.progress;
  ValidateOutput out;
  out.result = validate::validate_runs(catalog::shipped(), runs, vo);
  out.json = to_json(out.result);
  return out;
}

std::string validation_markdown(const validate::ValidationResult& r, const ValidateOptions& o,
                                const std::string& markdown_path) {
  std::ostringstream os;
  char buf[512];
  os << "# Validation of step-time predictions against published runs\n\n"
     << "Generated by `stepsim validate " << runs_files(o) << " --markdown " << markdown_path << "`"
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
  os << "\nBy framework and GPU (the GPU as the catalog resolved the row's name, with its power limit):\n\n"
     << "| framework | GPU | runs | MAPE | mean signed error |\n| --- | --- | ---: | ---: | ---: |\n";
  for (const auto& [key, s] : r.by_framework_gpu) {
    std::snprintf(buf, sizeof buf, "| %s | %s | %d | %.1f %% | %+.1f %% |\n", key.first.c_str(), key.second.c_str(),
                  s.rows, 100 * s.mape, 100 * s.mean_signed_error);
    os << buf;
  }
  os << "\nBy GPU architecture and kind of job, Megatron-Core's runs (those of the framework the calibration is "
     << "fitted to; other frameworks' below): the spread of the errors (10th to 90th percentile) and how many measured "
     << "steps fall inside the 80 % interval `simulate` gives with the shipped calibration (about 80 % of them when the "
     << "bands are honest; docs/CALIBRATION.md, \"Prediction interval by kind of job\").\n\n"
     << "| architecture | kind | runs | errors, 10th .. 90th percentile | measured inside the 80 % interval |\n"
     << "| --- | --- | ---: | --- | ---: |\n";
  auto band_rows = [&](const std::vector<validate::KindBand>& bands) {
    for (const auto& b : bands) {
      std::snprintf(buf, sizeof buf, "| %s | %s | %d | %+.1f %% .. %+.1f %% | %d of %d |\n", b.arch.c_str(),
                    b.kind.c_str(), b.rows, 100 * b.p10, 100 * b.p90, b.covered, b.with_interval);
      os << buf;
    }
  };
  band_rows(r.bands);
  if (!r.framework_bands.empty()) {
    os << "\nBy GPU architecture and framework other than Megatron-Core: the same (what data/efficiency.yaml's "
       << "`prediction_interval_by_framework` ships where a framework has a profile; docs/CALIBRATION.md).\n\n"
       << "| architecture | framework | runs | errors, 10th .. 90th percentile | measured inside the 80 % interval |\n"
       << "| --- | --- | ---: | --- | ---: |\n";
    band_rows(r.framework_bands);
  }
  std::snprintf(buf, sizeof buf, "\nAll %d runs, each of the %d sources weighted equally (a row of a source with n "
                "rows weighs 1/n): errors %+.1f %% .. %+.1f %% (10th .. 90th percentile: what a run from a source never "
                "seen can expect, data/efficiency.yaml's `new_source_interval` when these are the development files); "
                "measured inside the 80 %% interval: %d of %d.\n", r.all_sources.rows, r.all_sources.sources,
                100 * r.all_sources.p10, 100 * r.all_sources.p90, r.all_sources.covered, r.all_sources.with_interval);
  os << buf;
  os << "\n| run | measured (s) | predicted (s) | error | predicted MFU | recompute | measured from |\n"
     << "| --- | ---: | ---: | ---: | ---: | --- | --- |\n";
  for (const auto& x : r.rows) {
    std::snprintf(buf, sizeof buf, "| %s | %.3f | %.3f | %+.1f %% | %.1f %% | %s%s | %s |\n", x.id.c_str(),
                  x.measured_step_time_s, x.predicted_step_time_s, 100 * x.error, 100 * x.predicted_mfu,
                  x.recompute.c_str(), x.oom ? " (OOM)" : x.memory_tight ? " (tight)" : "", x.measured_from.c_str());
    os << buf;
  }
  os << "\n## Peak memory\n\n";
  std::snprintf(buf, sizeof buf, "Measured runs predicted not to fit in the GPU's memory: %zu of %zu", r.not_fit.size(),
                r.rows.size());
  os << buf;
  for (size_t i = 0; i < r.not_fit.size(); ++i) os << (i == 0 ? " (" : ", ") << r.not_fit[i];
  os << (r.not_fit.empty() ? ".\n" : ").\n");
  if (!r.tight.empty()) {
    os << "Predicted tight (PyTorch's allocations fit, its reserved peak does not: docs/MODEL.md §8, \"Fits, tight or "
          "out of memory\"): " << r.tight.size();
    for (size_t i = 0; i < r.tight.size(); ++i) os << (i == 0 ? " (" : ", ") << r.tight[i];
    os << ").\n";
  }
  if (r.memory.rows > 0) {
    std::snprintf(buf, sizeof buf, "\nRuns that report their peak (PyTorch's max_memory_reserved, as torchtitan logs "
                  "it), against the predicted reserved peak of the highest stage (docs/MODEL.md §8, \"What PyTorch "
                  "counts\"): %d runs, MAPE %.1f %%, mean signed error %+.1f %%, errors %+.1f %% .. %+.1f %% (10th .. "
                  "90th percentile), %d within 10 %%.\n\n", r.memory.rows, 100 * r.memory.mape,
                  100 * r.memory.mean_signed_error, 100 * r.memory_p10, 100 * r.memory_p90, r.memory_within_10_percent);
    os << buf << "| run | measured | predicted reserved | error | measured from |\n"
       << "| --- | ---: | ---: | ---: | --- |\n";
    for (const auto& x : r.rows) {
      if (!x.measured_memory_bytes) continue;
      std::snprintf(buf, sizeof buf, "| %s | %s | %s | %+.1f %% | %s |\n", x.id.c_str(),
                    report::format_bytes(*x.measured_memory_bytes).c_str(),
                    report::format_bytes(static_cast<double>(x.predicted_reserved_bytes)).c_str(),
                    100 * x.memory_error, x.memory_from.c_str());
      os << buf;
    }
  }
  if (!r.failed.empty()) {
    os << "\nRefused:\n\n";
    for (const auto& f : r.failed) os << "- " << f.id << ": " << f.message << "\n";
  }
  return os.str();
}

void write_row_jobs(const validate::ValidationResult& r, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);  // a failure shows in the first write's message
  for (const auto& x : r.rows) {
    // The row id names the file; characters a path would read (/, .., spaces) become '_'.
    std::string name = x.id;
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
    }
    write_output_file(dir + "/" + name + ".yaml", x.job_yaml, "row job (--jobs-dir)");
  }
}

std::string validate_report_html(const ValidateOptions& o, const ValidateOutput& out) {
  return report::validate_report_html(out.json, runs_files(o));
}

}  // namespace stepsim::api
