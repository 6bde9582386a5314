#pragma once
// Chrome trace (Trace Event Format) of the recorded ranks: one process per rank (pid = global rank), one
// thread per stream, complete events in microseconds with FLOPs, bytes, group, micro-batch and layer in
// args, synchronisation waits as their own slices, send->recv flow arrows and a memory counter.
// Opens in ui.perfetto.dev and chrome://tracing.
#include <ostream>
#include <string>

#include "stepsim/assemble/simulation.hpp"

namespace stepsim::report {

void write_chrome_trace(std::ostream& out, const sim::Simulation& s);
void write_chrome_trace_file(const std::string& path, const sim::Simulation& s);

}  // namespace stepsim::report
