#pragma once
// The two steps `stepsim compare SIMULATED MEASURED` puts side by side: SIMULATED must be a stepsim trace;
// MEASURED a PyTorch profiler (Kineto) trace or another stepsim trace (two simulations). Plain or gzip files.
#include <cstdint>
#include <optional>
#include <string>

#include "stepsim/compare/step_trace.hpp"

namespace stepsim::compare {

struct CompareOptions {
  std::optional<int> rank;      // simulated rank; default: the measured trace's distributedInfo.rank, else the
                                // first rank of the simulated trace
  std::optional<int64_t> step;  // measured ProfilerStep number (Kineto only); default: the last with kernels
};

struct CompareInputs {
  StepTrace sim, meas;
};

// InputError naming the file and the rule for anything a comparison cannot use.
CompareInputs load_compare_inputs(const std::string& sim_path, const std::string& meas_path, const CompareOptions& o);

}  // namespace stepsim::compare
