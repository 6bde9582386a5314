#pragma once
// What-if analysis: the same job with some numeric keys scaled (`stepsim whatif JOB --scale
// inter_node_bandwidth=2 --scale num_gpus=3`), simulated before and after, with the end-to-end time of a run
// (failures and checkpoints, reliability.hpp) and its cost. docs/WHATIF.md.
#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/plan/reliability.hpp"
#include "stepsim/job/job_spec.hpp"

namespace stepsim::plan {

struct Scale {
  std::string key;     // as the user wrote it (dotted job key or alias)
  double factor = 1;
};

// "key=factor" with factor > 0 and finite; InputError naming --scale and the rule.
Scale parse_scale(const std::string& arg);

// Every key whatif scales, dotted (aliases in parentheses), for help texts and errors.
std::string scalable_keys_text();
// The dotted job key a --scale name (path or alias) scales, or "" for none.
std::string scaled_key_path(const std::string& name);

// A copy of the job tree `root` (whose validated job is `base`) with every scale applied to the value `base` has
// (defaults and units resolved: a bandwidth given in Gb/s is rewritten in GB/s). Scaling cluster.num_gpus scales
// parallelism.data with it (TP, PP, CP kept). InputError naming --scale for an unknown key, a count that would not
// be a whole number, or a key scaled twice.
YAML::Node apply_scales(const YAML::Node& root, const spec::JobSpec& base, const std::vector<Scale>& scales);

struct WhatIfSettings {
  int64_t steps = 10000;                // run length for the end-to-end time
  double failures_per_node_day = kDefaultFailuresPerNodeDay;
  double storage_GBps = kDefaultStorageGBps;  // checkpoint write bandwidth
  double usd_per_gpu_hour = 0;          // 0: cost in GPU-hours only
};

// One side of the comparison.
struct Outcome {
  double step_time_s = 0, mfu = 0, tokens_per_s = 0, tflops_per_gpu = 0;
  std::string mfu_of;  // the precision whose peak mfu is against, where that is not bf16's ("" at bf16's)
  int gpus = 0;
  int64_t nodes = 0;
  bool oom = false;
  bool memory_tight = false;  // fits, but the reserved peak does not (report/memory_fit.hpp)
  int64_t interval_steps = 0;  // optimal checkpoint interval (MoFa eq. 44)
  double ettr = 0;
  double e2e_s = 0;            // expected end-to-end time of `steps` steps with failures and checkpoints
  double gpu_hours = 0;        // e2e x GPUs
  double cost_usd = 0;         // gpu_hours x price (0 without a price)
  double intra_node_GBps = 0;  // the links the side ran on: NVLink per GPU, and the network as `simulate` prints it
  std::string inter_node;
  std::vector<std::string> notes;  // the side's simulation notes (an NVLink domain left unset, a transport, ...)
};

// Simulates one step of `job` and turns it into a run of `s.steps` steps.
Outcome evaluate(const catalog::Catalog& cat, const spec::JobSpec& job, const WhatIfSettings& s);

}  // namespace stepsim::plan
