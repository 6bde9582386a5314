// libFuzzer target for the row -> job conversion of `stepsim validate`, on rows the published-runs reader accepts
// (fuzz_published_runs.cpp fuzzes the reader alone): a row's measured step time is finite and positive, and its job
// either validates or is refused with an InputError (never another exception or a crash).
#include <cmath>
#include <cstdint>
#include <string>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/validate/published_run.hpp"
#include "stepsim/validate/run_job.hpp"

#include "fuzz_support.hpp"
#include "stepsim/catalog/catalog.hpp"

using fuzz_support::require;
using namespace stepsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<validate::PublishedRun> runs;
  try {
    runs = validate::parse_published_runs(text, "fuzz.csv");
  } catch (const InputError& e) {
    require(std::string(e.what()).rfind("fuzz.csv", 0) == 0);
    return 0;
  }
  require(!runs.empty());
  // The rows are read independently: converting the first few to jobs exercises that code as well as all of them,
  // and keeps a long seed file (50 rows) from dominating the fuzzer's time.
  constexpr size_t kRowsConverted = 4;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    require(r.line >= 2 && !r.id.empty() && r.layers >= 1 && r.num_gpus >= 1);
    if (i >= kRowsConverted) continue;
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
