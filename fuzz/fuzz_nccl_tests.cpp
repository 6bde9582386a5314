// libFuzzer target for the measurement readers (nccl-tests text and CSV, kernel records). InputError is the expected
// outcome for bad input; any other exception, a crash, a hang, or a result that breaks the invariants below is a bug.
// The fit behind them has its own target (fuzz_nccl_fit.cpp), which runs about 20 times slower per input.
#include <cmath>
#include <cstdint>
#include <string>

#include "stepsim/calibrate/nccl_records.hpp"
#include "stepsim/calibrate/nccl_tests_reader.hpp"
#include "stepsim/io/input_error.hpp"

#include "fuzz_support.hpp"

namespace {

using fuzz_support::require;
using namespace stepsim;

int line_count(const std::string& text) {
  int n = 1;
  for (char c : text) n += c == '\n';
  return n;
}

void check_file(const cost::NcclTestsFile& f, int lines) {
  require(f.row_count() > 0);
  require(f.garbled_lines >= static_cast<int>(f.garbled_line_numbers.size()));
  for (int l : f.garbled_line_numbers) require(l >= 1 && l <= lines);
  for (const auto& m : f.mismatches) require(m.line >= 1 && m.line <= lines && !m.what.empty());
  for (const auto& t : f.tables) {
    require(!t.rows.empty());
    require(t.ranks >= 0 && t.nodes >= 0);
    int prev = 0;
    for (const auto& r : t.rows) {
      require(r.line > prev && r.line <= lines);  // rows keep file order
      prev = r.line;
      require(std::isfinite(r.time_us) && r.time_us >= 0);
      require(std::isfinite(r.algbw_GBps) && std::isfinite(r.busbw_GBps));
      require(r.time_tol >= 0 && r.algbw_tol >= 0 && r.busbw_tol >= 0);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const int lines = line_count(text);
  try {
    check_file(cost::parse_nccl_tests(text, "fuzz.txt"), lines);
  } catch (const InputError&) {
  }
  try {
    const cost::KernelRecords k = cost::parse_kernel_records(text, "fuzz.csv");
    require(!k.records.empty());
    for (const auto& r : k.records) {
      require(r.line >= 1 && r.line <= lines && r.duration_us > 0 && std::isfinite(r.duration_us));
      require(r.nodes >= 1 && r.nodes <= r.ranks && r.ranks_per_node * r.nodes >= r.ranks);
    }
  } catch (const InputError&) {
  }
  return 0;
}
