#pragma once
// `stepsim whatif` as a library call (the CLI and the Python API): the job before and after scaling keys.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/api/job_input.hpp"
#include "stepsim/plan/whatif.hpp"

namespace stepsim::api {

struct WhatIfOptions {
  JobInput job;
  std::vector<std::string> scales;  // "KEY=FACTOR"
  plan::WhatIfSettings settings;
};

struct WhatIfOutput {
  spec::JobSpec before_job;
  std::vector<plan::Scale> scales;
  plan::Outcome before, after;
  nlohmann::json json;  // what --json writes
};

// InputError for bad options or a bad job.
WhatIfOutput whatif(const WhatIfOptions& o);
// What `stepsim whatif` prints: the run's settings, the scales, and before/after/change per quantity.
std::string whatif_text(const WhatIfOptions& o, const WhatIfOutput& r);

}  // namespace stepsim::api
