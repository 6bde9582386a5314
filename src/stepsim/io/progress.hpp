#pragma once
// Progress of long work (a plan search, a validation, a big simulation, a trace import), reported by the library to
// whoever shows it (the CLI's progress bar, report/progress_bar.hpp). Like InputError it crosses every layer, so it
// lives here with the input contracts. Called from worker threads too: a callee must be thread-safe. An empty
// function reports nothing.
#include <cstdint>
#include <functional>
#include <string_view>

namespace stepsim {

// `done` of `total` units of `what` ("estimating plans", "simulating runs", ...).
using ProgressFn = std::function<void(std::string_view what, int64_t done, int64_t total)>;

}  // namespace stepsim
