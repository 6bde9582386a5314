#pragma once
// What fuzz_published_runs.cpp and fuzz_run_jobs.cpp both require of the published-runs CSV reader.
#include <optional>
#include <string>
#include <vector>

#include "stepsim/io/input_error.hpp"
#include "stepsim/validate/published_run.hpp"

#include "fuzz_support.hpp"

namespace published_runs_checks {

// The rows of `text`, or nullopt where the reader refused it with an InputError naming the file; rows that parse
// keep their invariants.
inline std::optional<std::vector<stepsim::validate::PublishedRun>> parse(const std::string& text) {
  using fuzz_support::require;
  std::vector<stepsim::validate::PublishedRun> runs;
  try {
    runs = stepsim::validate::parse_published_runs(text, "fuzz.csv");
  } catch (const stepsim::InputError& e) {
    require(std::string(e.what()).rfind("fuzz.csv", 0) == 0);
    return std::nullopt;
  }
  require(!runs.empty());
  for (const auto& r : runs) require(r.line >= 2 && !r.id.empty() && r.layers >= 1 && r.num_gpus >= 1);
  return runs;
}

}  // namespace published_runs_checks
