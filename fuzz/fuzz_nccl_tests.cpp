// libFuzzer target for the measurement readers (nccl-tests text and CSV, kernel records). InputError is the expected
// outcome for bad input; any other exception, a crash, a hang, or a result that breaks the invariants of
// nccl_tests_checks.hpp is a bug. The fit behind them has its own, slower target (fuzz_nccl_fit.cpp).
#include <cstdint>
#include <string>

#include "stepsim/io/input_error.hpp"

#include "nccl_tests_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stepsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const int lines = nccl_tests_checks::line_count(text);
  try {
    nccl_tests_checks::check_file(cost::parse_nccl_tests(text, "fuzz.txt"), lines);
  } catch (const InputError&) {
  }
  try {
    nccl_tests_checks::check_records(cost::parse_kernel_records(text, "fuzz.csv"), lines);
  } catch (const InputError&) {
  }
  return 0;
}
