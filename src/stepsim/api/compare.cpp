#include "stepsim/api/compare.hpp"

#include "stepsim/compare/compare_report.hpp"
#include "stepsim/compare/side_by_side.hpp"

namespace stepsim::api {

CompareOutput compare_traces(const CompareOptions& o) {
  CompareOutput out;
  out.steps = compare::load_compare_inputs(o.simulated, o.measured, o.pick);
  out.result = compare::compare_steps(out.steps.sim, out.steps.meas);
  out.json = compare::report_json(out.steps.sim, out.steps.meas, out.result, o.top);
  out.text = compare::report_text(out.steps.sim, out.steps.meas, out.result, o.top);
  return out;
}

void write_side_by_side(const std::string& path, const CompareOutput& out) {
  compare::write_side_by_side_file(path, out.steps.sim, out.steps.meas);
}

}  // namespace stepsim::api
