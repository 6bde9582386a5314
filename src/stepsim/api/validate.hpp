#pragma once
// `stepsim validate RUNS.csv...` as a library call (the CLI and the Python API): every published run of the CSV
// simulated, predicted vs measured step time, MAPE per source and overall (docs/VALIDATION.md). Several CSVs are
// validated as one set: the spread over all their sources is data/efficiency.yaml's new_source_interval.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/validate/validation.hpp"

namespace stepsim::api {

struct ValidateOptions {
  std::vector<std::string> csvs;       // one or more runs CSVs, read in order (row ids unique across them)
  std::vector<std::string> only;       // row ids (empty: all)
  std::vector<std::string> overrides;  // key=value applied to every row's job
  unsigned jobs = 0;                   // rows simulated at once (0: one per hardware thread)
  ProgressFn progress;                 // empty: none
};

struct ValidateOutput {
  validate::ValidationResult result;
  nlohmann::json json;  // what --json writes
};

ValidateOutput validate(const ValidateOptions& o);

// The files given, joined with spaces (report titles and the command a report names).
std::string runs_files(const ValidateOptions& o);

// What `stepsim validate` prints: a line per run, MAPE and mean signed error per source and overall, the error band
// per architecture and kind, the rows refused; with verbose, each row's assumptions, breakdown and memory.
std::string validate_text(const ValidateOutput& out, bool verbose);

// `validate --report OUT.html`: predicted against measured per run, MAPE and mean signed error per source.
std::string validate_report_html(const ValidateOptions& o, const ValidateOutput& out);

// docs/VALIDATION.md is this text (`--markdown PATH`): every figure in it comes from the command it names.
std::string validation_markdown(const validate::ValidationResult& r, const ValidateOptions& o,
                                const std::string& markdown_path);

// `--jobs-dir DIR`: each row's simulated job as DIR/ID.yaml (characters other than letters, digits, - and _ become _).
void write_row_jobs(const validate::ValidationResult& r, const std::string& dir);

}  // namespace stepsim::api
