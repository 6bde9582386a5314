#pragma once
// The outputs of `stepsim compare` besides the side-by-side trace: the readable report (stdout) and the JSON
// report (--json). Keys and columns: docs/COMPARE.md.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/compare/step_comparison.hpp"
#include "stepsim/compare/step_trace.hpp"

namespace stepsim::compare {

// `top`: kernel names listed (largest |error| first).
std::string report_text(const StepTrace& sim, const StepTrace& meas, const Comparison& c, size_t top);
nlohmann::json report_json(const StepTrace& sim, const StepTrace& meas, const Comparison& c, size_t top);

}  // namespace stepsim::compare
