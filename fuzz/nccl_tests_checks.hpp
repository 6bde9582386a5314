#pragma once
// What fuzz_nccl_tests.cpp and fuzz_nccl_fit.cpp both require of the measurement readers' output.
#include <cmath>
#include <string>

#include "stepsim/calibrate/nccl_records.hpp"
#include "stepsim/calibrate/nccl_tests_reader.hpp"

#include "fuzz_support.hpp"

namespace nccl_tests_checks {

using fuzz_support::require;

inline int line_count(const std::string& text) {
  int n = 1;
  for (char c : text) n += c == '\n';
  return n;
}

// An nccl-tests file that parsed: rows in file order, finite, every line number inside the input.
inline void check_file(const stepsim::cost::NcclTestsFile& f, int lines) {
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

// A kernel-records file that parsed: positive finite durations, consistent rank layouts.
inline void check_records(const stepsim::cost::KernelRecords& k, int lines) {
  require(!k.records.empty());
  for (const auto& r : k.records) {
    require(r.line >= 1 && r.line <= lines && r.duration_us > 0 && std::isfinite(r.duration_us));
    require(r.nodes >= 1 && r.nodes <= r.ranks && r.ranks_per_node * r.nodes >= r.ranks);
  }
}

}  // namespace nccl_tests_checks
