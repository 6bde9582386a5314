// libFuzzer target for the row -> job conversion of `stepsim validate`, on rows the published-runs reader accepts
// (fuzz_published_runs.cpp fuzzes the reader alone): a row's measured step time is finite and positive, and its job
// either validates or is refused with an InputError (never another exception or a crash).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/validate/run_job.hpp"

#include "published_runs_checks.hpp"
#include "stepsim/catalog/catalog.hpp"

using fuzz_support::require;
using namespace stepsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  const auto parsed = published_runs_checks::parse(std::string(reinterpret_cast<const char*>(data), size));
  if (!parsed) return 0;
  const std::vector<validate::PublishedRun>& runs = *parsed;
  // The rows are read independently: converting the first few to jobs exercises that code as well as all of them,
  // and keeps a long seed file (50 rows) from dominating the fuzzer's time.
  constexpr size_t kRowsConverted = 4;
  for (size_t i = 0; i < std::min(runs.size(), kRowsConverted); ++i) {
    const auto& r = runs[i];
    try {
      const double t = validate::measured_step_time_s(stepsim::catalog::shipped().gpus, r);
      require(std::isfinite(t) && t > 0);
      validate::RunJob j = validate::job_for_run(stepsim::catalog::shipped().gpus, r);
      j.root["training"]["recompute"] = "full";
      spec::job_from_node(stepsim::catalog::shipped().gpus, j.root, "fuzz row");
    } catch (const InputError&) {
    }
  }
  return 0;
}
