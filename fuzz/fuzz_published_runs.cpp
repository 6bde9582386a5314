// libFuzzer target for the published-runs CSV reader of `stepsim validate`. A bad cell must be an InputError naming
// the file, line and column; rows that parse keep their invariants (published_runs_checks.hpp). The row -> job
// conversion, several times slower per input, has its own target (fuzz_run_jobs.cpp).
#include <cstdint>
#include <string>

#include "published_runs_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  (void)published_runs_checks::parse(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
