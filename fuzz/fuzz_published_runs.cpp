// libFuzzer target for the published-runs CSV reader of `stepsim validate`. A bad cell must be an InputError naming
// the file, line and column; rows that parse keep their invariants. The row -> job conversion, about 15 times slower
// per input, has its own target (fuzz_run_jobs.cpp).
#include <cstdint>
#include <string>

#include "stepsim/io/input_error.hpp"
#include "stepsim/validate/published_run.hpp"

#include "fuzz_support.hpp"

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
  for (const auto& r : runs) require(r.line >= 2 && !r.id.empty() && r.layers >= 1 && r.num_gpus >= 1);
  return 0;
}
