#pragma once
// Which kind of Chrome trace a file is, told from its root object in one pass without keeping any event:
// stepsim's own (otherData.generator "stepsim", written by `stepsim simulate --trace`) or a PyTorch profiler
// (Kineto) trace (traceEvents without that generator).
#include <string>

#include "stepsim/ingest/trace/text_buffer.hpp"

namespace stepsim::compare {

enum class TraceKind { Stepsim, Kineto };

// InputError naming `name` when the text is not JSON, not an object, or has no traceEvents.
TraceKind peek_trace_kind(const trace::TextBuffer& text, const std::string& name);

}  // namespace stepsim::compare
