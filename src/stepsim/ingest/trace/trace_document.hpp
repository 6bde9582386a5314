#pragma once
// One trace file of either format, told apart by its root keys ("traceEvents" for Kineto, "nodes" for an
// execution trace) in a single pass over the document.
#include <cstdint>
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
// op_bytes > 0: a Kineto trace whose kernels, at that many bytes each, would not fit a rank file is refused before
// the parse (trace import passes min_imported_op_bytes()).
TraceDocument read_trace_document(const std::string& path, uintmax_t op_bytes = 0);

}  // namespace stepsim::trace
