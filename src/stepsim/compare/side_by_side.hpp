#pragma once
// The side-by-side Chrome trace of a comparison: process "simulated rank R" above "measured rank R", each shifted
// so its step starts at 0 (or its first op, if one began earlier), one thread per stream plus a "step" thread
// showing the step window. Every event keeps its name and gets its op type as `cat` and args.type, so Perfetto can
// filter or colour by type. Opens in ui.perfetto.dev and chrome://tracing.
#include <ostream>
#include <string>

#include "stepsim/compare/step_trace.hpp"

namespace stepsim::compare {

void write_side_by_side(std::ostream& out, const StepTrace& sim, const StepTrace& meas);
// InputError naming `path` when it cannot be written.
void write_side_by_side_file(const std::string& path, const StepTrace& sim, const StepTrace& meas);

}  // namespace stepsim::compare
