#pragma once
// Reads one rank's step from a stepsim Chrome trace (`stepsim simulate --trace`, report/chrome_trace.cpp): its
// complete events (kernels, collectives, send/recv, "wait: ..." slices, host gaps) and thread names. The step
// is the span of the rank's events. Only that rank's events are kept, so a trace of many ranks costs the text
// plus one rank.
#include <optional>
#include <string>

#include "stepsim/compare/step_trace.hpp"
#include "stepsim/ingest/trace/text_buffer.hpp"

namespace stepsim::compare {

// `rank`: the process (pid) to read; nullopt: the first rank the trace lists. InputError naming `name` when the
// text is not a stepsim trace, an event is malformed, or the rank was not recorded (the message lists the
// recorded ranks).
StepTrace parse_stepsim_trace(const trace::TextBuffer& text, const std::string& name, std::optional<int> rank);

}  // namespace stepsim::compare
