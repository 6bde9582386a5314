#pragma once
// One trace file of either format, told apart by its root keys ("traceEvents" for Kineto, "nodes" for an
// execution trace) in a single pass over the document.
#include <string>

#include "stepsim/ingest/trace/execution_trace.hpp"
#include "stepsim/ingest/trace/kineto_trace.hpp"
#include "stepsim/ingest/trace/text_buffer.hpp"

namespace stepsim::trace {

enum class TraceFormat { Kineto, Execution };

struct TraceDocument {
  TraceFormat format = TraceFormat::Kineto;
  KinetoTrace kineto;
  ExecutionTrace execution;
};

// InputError naming `name` when the text is not JSON, not an object, or has neither root key.
TraceDocument parse_trace_document(const TextBuffer& text, const std::string& name);
TraceDocument read_trace_document(const std::string& path);

}  // namespace stepsim::trace
