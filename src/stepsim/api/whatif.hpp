#pragma once
// `stepsim whatif` as a library call (the CLI and the Python API): the job before and after scaling keys.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/api/job_input.hpp"
#include "stepsim/plan/whatif.hpp"

namespace stepsim::api {

struct WhatIfOptions {
  JobInput job;
  std::vector<std::string> scales;  // "KEY=FACTOR"
  // "KEY=VALUE" set on the after side, any job key (`--to cluster.gpu=B200`): a GPU swapped brings its own NVLink rate
  // unless a --to gives cluster.intra_node.bandwidth_GBps too.
  std::vector<std::string> to;
  // A token budget (`--tokens 15e12`): each side runs ceil(tokens / (global batch x sequence)) steps instead of
  // settings.steps.
  std::optional<double> tokens;
  // The after side re-planned (`--replan`): its layout replaced by plan #1 of `stepsim plan` for the after job.
  bool replan = false;
  plan::WhatIfSettings settings;
};

struct WhatIfOutput {
  spec::JobSpec before_job;
  std::vector<plan::Scale> scales;
  plan::Outcome before, after;
  int64_t before_steps = 0, after_steps = 0;  // the run's steps on each side
  std::string after_gpu;                      // the after side's GPU (--to cluster.gpu)
  std::vector<std::string> notes;             // what --to changed besides the key it names
  std::string replanned;                      // --replan: the after side's plan (plan::describe), else ""
  nlohmann::json json;  // what --json writes
};

// InputError for bad options or a bad job.
WhatIfOutput whatif(const WhatIfOptions& o);
// What `stepsim whatif` prints: the run's settings, the scales, and before/after/change per quantity.
std::string whatif_text(const WhatIfOptions& o, const WhatIfOutput& r);

}  // namespace stepsim::api
