#pragma once
// Simulating every published run of a CSV and comparing with what was measured: per-row error, MAPE per source and
// overall, mean signed error. Errors are fractions, signed: negative = stepsim predicted a faster step.
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/io/progress.hpp"
#include "stepsim/report/breakdown.hpp"
#include "stepsim/validate/published_run.hpp"

namespace stepsim::validate {

struct RowResult {
  std::string id, source;
  int line = 0;
  double measured_step_time_s = 0;
  std::string measured_from;  // which column the measured step came from (and the FLOP convention)
  double predicted_step_time_s = 0;
  double error = 0;           // (predicted - measured) / measured
  double predicted_mfu = 0;   // model FLOPs as stepsim counts them (3 x forward) / peak
  std::string recompute;      // what was simulated
  bool oom = false;           // the simulated plan does not fit the GPU memory even with full recompute
  bool memory_tight = false;  // it fits, but its reserved peak does not (report/memory_fit.hpp)
  int64_t peak_bytes = 0;     // the simulated plan's highest per-GPU memory peak (any stage)
  int64_t capacity_bytes = 0; // the GPU's memory
  int64_t predicted_reserved_bytes = 0;  // PyTorch's max_memory_reserved at the highest stage, as simulate gives it
  // The row's measured peak memory (PublishedRun::peak_memory_bytes) and the prediction's error against it.
  std::optional<double> measured_memory_bytes;
  std::string memory_from;
  double memory_error = 0;  // (predicted reserved - measured) / measured
  std::string job_yaml;       // the job simulated (recompute and --set overrides applied), for `stepsim simulate`
  report::Breakdown breakdown;  // rank 0
  std::vector<std::string> assumptions;
  std::vector<std::string> stated;  // the row's optional recipe columns (RunJob::stated)
  std::vector<std::string> notes;   // what `simulate` would print as notes for the row's job (e.g. host-bound MoE)
  std::string arch;                 // the GPU's architecture (ampere, hopper, ...)
  std::string framework;            // the row's framework column ("not stated" when blank)
  std::string gpu;                  // the catalog GPU the row's name resolved to, with its power limit ("H100-SXM-96GB at 500 W")
  std::string kind;                 // "dense" or "moe": which calibration band the prediction carries
  // The prediction's 80% interval as `simulate` gives it (seconds); absent where the architecture has no residuals.
  std::optional<std::array<double, 2>> interval_s;
  bool covered() const {
    return interval_s && measured_step_time_s >= (*interval_s)[0] && measured_step_time_s <= (*interval_s)[1];
  }
};

struct FailedRow {
  std::string id;
  int line = 0;
  std::string message;
};

struct SourceStats {
  int rows = 0;
  double mape = 0, mean_signed_error = 0;
};

// The rows of one GPU architecture and kind of job: the spread of their errors (what a calibration on these rows
// would give as the kind's band, hw/prediction_interval.hpp) and how many measured steps fall inside the 80%
// interval their predictions carry (near 80% when the shipped bands are honest).
struct KindBand {
  std::string arch, kind;
  int rows = 0;
  double p10 = 0, p90 = 0;    // 10th and 90th percentile of the rows' signed errors
  int with_interval = 0;      // rows whose prediction has an interval
  int covered = 0;            // of those, measured within it
};

// Every row with each source weighted equally (a row of a source with n rows weighs 1/n): the spread of errors a run
// from a source never seen can expect, data/efficiency.yaml's new_source_interval; and how many measured steps fall
// inside the intervals their predictions carry.
struct SourceWeightedBand {
  int sources = 0, rows = 0;
  double p10 = 0, p90 = 0;
  int with_interval = 0;
  int covered = 0;
};

struct ValidationResult {
  std::vector<RowResult> rows;
  SourceWeightedBand all_sources;
  std::vector<KindBand> bands;  // by architecture, then kind: rows of Megatron-Core (framework megatron or not stated)
  // The same by architecture and framework (`kind` holds the framework) for rows of a framework other than
  // Megatron-Core: what data/efficiency.yaml's prediction_interval_by_framework ships.
  std::vector<KindBand> framework_bands;
  std::vector<FailedRow> failed;
  std::map<std::string, SourceStats> by_source;
  std::map<std::pair<std::string, std::string>, SourceStats> by_framework_gpu;  // (framework, gpu)
  double mape = 0, mean_signed_error = 0;
  SourceStats memory;                // the rows with a measured peak: the reserved peak's errors
  double memory_p10 = 0, memory_p90 = 0;
  int memory_within_10_percent = 0;  // of those rows, the ones whose |error| is at most 10 % (issue 46's bar)
  std::vector<std::string> not_fit;  // measured runs (every row is one) predicted not to fit the GPU's memory
  std::vector<std::string> tight;    // measured runs predicted to fit only as the allocator gives back its cache
};

struct ValidationOptions {
  std::vector<std::string> overrides;  // --set key=value applied to every row's job
  std::vector<std::string> only_ids;   // simulate these rows only (empty = all)
  std::vector<std::string> exclude_ids;  // leave these rows out (calibrate compute --exclude)
  unsigned threads = 0;                // rows simulated at once (0 = one per hardware thread)
  ProgressFn progress;                 // "simulating runs": rows done of those selected
};

// q-th quantile (0..1) by linear interpolation of the sorted values.
double quantile(std::vector<double> v, double q);

// q-th quantile of weighted values: each value sits at the middle of its share of the cumulative weight, linear in
// between, the extremes below the first middle and above the last (equal weights: (i + 1/2) / n).
double weighted_quantile(std::vector<std::pair<double, double>> value_weight, double q);

// Simulates each row (rows the simulator refuses go to `failed` with the reason). A row whose recompute is not
// stated runs with the least recompute that fits the GPU memory (none, selective, full), as its authors must have.
ValidationResult validate_runs(const catalog::Catalog& cat, const std::vector<PublishedRun>& runs,
                               const ValidationOptions& o = {});

}  // namespace stepsim::validate
