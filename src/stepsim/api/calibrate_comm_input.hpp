#pragma once
// `stepsim calibrate comm` inputs: measurement files -> measured points, and the cluster they were measured on
// (the files say GPU, ranks, hosts and NCCL version; options and the cluster file say the rest).
#include <string>
#include <vector>

#include "stepsim/calibrate/nccl_fit.hpp"
#include "stepsim/job/job_spec.hpp"

namespace stepsim::api {

struct CalibrateOptions {
  std::vector<std::string> nccl_tests;  // nccl-tests text or CSV files
  std::vector<std::string> records;     // aligned kernel-record CSV files
  std::vector<std::string> profiles;    // `stepsim profile nccl --summary` files (their `records`)
  std::string collective;               // for text that names no *_perf binary
  std::string cluster_path;
  int gpus = 0;           // ranks, for text without a device list
  int gpus_per_node = 0;  // 0: from the data
  std::vector<std::string> overrides;
  std::string nccl_version;  // "": from the files
  std::string algo = "auto";
  std::string proto = "auto";  // NCCL_PROTO the measurements ran with
  std::string store;  // "": the default store
  std::string json_path;
  bool dry_run = false;
};

struct CalibrationInput {
  std::vector<cost::CommPoint> points;
  spec::ClusterSpec cluster;
  std::string nccl_version;          // "" unknown
  std::vector<std::string> notes;    // where cluster values came from; what the readers skipped or flagged
  std::string source;                // "file (collectives); ..." for the store
  std::vector<std::string> files;    // as given
};

// InputError naming the file (and line) and the rule for anything inconsistent or missing.
CalibrationInput load_calibration_input(const CalibrateOptions& o);

}  // namespace stepsim::api
