#pragma once
// The calibration store: an SQLite file of fitted NCCL model parameters, keyed by GPU, interconnect, node count and
// NCCL version (docs/CALIBRATION.md has the schema). `stepsim calibrate comm` writes it; the NCCL model reads it.
#include "stepsim/catalog/prediction_interval.hpp"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/job/job_spec.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"

struct sqlite3;

namespace stepsim::hw {

constexpr int kCalibrationSchemaVersion = 1;

struct CalibrationRow {
  int64_t id = 0;                  // assigned by the store
  std::string gpu;                 // GPU catalog name ("A100-80GB")
  std::string interconnect;        // interconnect_key() of the cluster the terms were computed for
  int nodes = 1;                   // nodes the measured groups spanned
  int gpus_per_node = 1;           // GPUs per node of the measured machine
  std::string nccl_version;        // "2.16.5"; "" unknown
  std::string collective = "all";  // "all": fitted on every measured collective; else one collective's own fit
  uint64_t chunk_bytes = 0;        // 0: all chunk sizes; else fitted on calls with this chunk size
  double alpha_us = 0, beta_us = 0, gamma_us = 0;
  double intra_efficiency = 1, inter_efficiency = 1, reduce_GBps = 1;
  std::string fitted;              // the parameters fitted, e.g. "alpha_us,beta_us,intra_efficiency"; others are defaults
  int points = 0;
  double mean_abs_error_pct = 0, max_abs_error_pct = 0;  // in-sample
  std::optional<double> cv_mean_abs_error_pct;           // cross-validated, joint rows only
  std::string source;              // measurement files
  std::string created;             // ISO 8601 time, given by the caller
};

// A compute-model calibration of one GPU architecture (`stepsim calibrate compute`): the sustained tensor-core clock
// fraction fitted to measured runs, its errors, and the prediction interval its residuals give.
struct ComputeCalibrationRow {
  int64_t id = 0;
  std::string arch;              // ampere | hopper | ...
  double sustained_clock = 1;
  // Multiplies the architecture's attention-kernel efficiencies (data/efficiency.yaml), fitted with the clock; 1 in
  // rows written before it existed.
  double attention_scale = 1;
  int runs = 0;                  // measured runs it was fitted on
  double mape_pct = 0;           // in-sample, after the fit
  double loo_mape_pct = 0;       // leave-one-out
  double interval_low = 0, interval_high = 0;  // residual quantiles (signed fractions) for step_time_interval_s
  KindIntervals kind_intervals;  // the same per kind of job with runs (columns <kind>_interval_low/high, <kind>_runs)
  std::string source;            // the runs file
  std::string created;
};

class CalibrationStore {
 public:
  // Opens or creates the store (and its directories). InputError naming the path for a file that is not SQLite,
  // an SQLite database without this schema, or a schema version this build does not know.
  static CalibrationStore open(const std::string& path);
  // Opens an existing store read-only; nullopt when the file does not exist. Same errors as open().
  static std::optional<CalibrationStore> open_existing(const std::string& path);

  CalibrationStore(CalibrationStore&& o) noexcept;
  CalibrationStore& operator=(CalibrationStore&& o) noexcept;
  CalibrationStore(const CalibrationStore&) = delete;
  CalibrationStore& operator=(const CalibrationStore&) = delete;
  ~CalibrationStore();

  // Inserts the rows in one transaction; returns their ids.
  std::vector<int64_t> insert(const std::vector<CalibrationRow>& rows);
  // Every row of (gpu, interconnect[, nccl_version]), sorted by nodes, collective, chunk_bytes, nccl_version, id.
  std::vector<CalibrationRow> query(const std::string& gpu, const std::string& interconnect,
                                    const std::optional<std::string>& nccl_version = std::nullopt) const;
  // Every row, sorted by gpu, interconnect, then as query().
  std::vector<CalibrationRow> all() const;
  // The row for a group spanning `nodes` nodes: among rows of (gpu, interconnect, collective, chunk_bytes), the node
  // count is the largest <= nodes (else the smallest); then an exact nccl_version match is preferred, then the
  // newest id. A collective other than "all" falls back to the "all" rows when it has none.
  std::optional<CalibrationRow> lookup(const std::string& gpu, const std::string& interconnect, int nodes,
                                       const std::string& nccl_version = "", const std::string& collective = "all",
                                       uint64_t chunk_bytes = 0) const;
  const std::string& path() const { return path_; }

  // Deletes the NCCL rows `ids` and every compute calibration of the architectures `archs`, in one transaction;
  // InputError naming the first id or architecture the store does not hold (then nothing is deleted). Returns the
  // rows deleted.
  int64_t remove(const std::vector<int64_t>& ids, const std::vector<std::string>& archs);

  // Compute calibrations (table compute_calibration, created when a store is opened for writing).
  int64_t insert_compute(const ComputeCalibrationRow& row);
  // The newest row of an architecture; nullopt when none (or a store from before the table existed).
  std::optional<ComputeCalibrationRow> lookup_compute(const std::string& arch) const;

 private:
  CalibrationStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  // `clauses`: constant WHERE/ORDER BY text; values only through `args` (?1, ?2, ...).
  std::vector<CalibrationRow> select(const std::string& clauses, const std::vector<std::string>& args) const;

  sqlite3* db_ = nullptr;
  std::string path_;
};

// $STEPSIM_CALIBRATION_DB if set, else $HOME/.cache/stepsim/calibration.sqlite.
std::string default_calibration_store_path();

// The store key of a cluster's hardware: GPU catalog name and the nominal bandwidths the model's efficiencies are
// relative to, e.g. "intra=300GBps,inter=400Gbps" (inter in Gb/s, as NICs are sold).
struct CalibrationKey {
  std::string gpu;
  std::string interconnect;
};
CalibrationKey calibration_key(const GpuSpec& gpu, const spec::ClusterSpec& cluster);
std::string interconnect_key(const spec::ClusterSpec& cluster);

}  // namespace stepsim::hw
