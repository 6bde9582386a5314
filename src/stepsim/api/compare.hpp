#pragma once
// `stepsim compare` as a library call (the CLI's cmd_compare.cpp): a simulated step against a measured one — step
// error, error per op type and per kernel name, and a side-by-side Chrome trace (docs/COMPARE.md).
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/compare/compare_inputs.hpp"
#include "stepsim/compare/step_comparison.hpp"

namespace stepsim::api {

struct CompareOptions {
  std::string simulated;  // the trace of stepsim simulate --trace
  std::string measured;   // a Kineto trace, or another stepsim trace
  compare::CompareOptions pick;  // rank and measured ProfilerStep (defaults: see compare_inputs.hpp)
  size_t top = 10;               // kernel names listed, largest error first
};

struct CompareOutput {
  compare::CompareInputs steps;  // the two steps as read
  compare::Comparison result;
  nlohmann::json json;  // what --json writes
  std::string text;     // what the CLI prints
};

// InputError for unreadable traces, a rank or step that is not there.
CompareOutput compare_traces(const CompareOptions& o);
// The side-by-side Chrome trace (--out): both steps on one timeline.
void write_side_by_side(const std::string& path, const CompareOutput& out);

}  // namespace stepsim::api
