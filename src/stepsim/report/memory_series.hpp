#pragma once
// Memory over time of the recorded ranks as CSV: rank,time_s,allocated_bytes — one row per change
// (static memory at t = 0, then every activation allocation and release the engine applied).
#include <ostream>
#include <string>

#include "stepsim/assemble/simulation.hpp"

namespace stepsim::report {

void write_memory_csv(std::ostream& out, const sim::Simulation& s);
void write_memory_csv_file(const std::string& path, const sim::Simulation& s);

}  // namespace stepsim::report
