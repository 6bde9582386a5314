#include "stepsim/ingest/trace/trace_document.hpp"

#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/json_read.hpp"
#include "stepsim/ingest/trace/readers.hpp"

namespace stepsim::trace {

namespace {

// Reads the document; `release`, when given, is the text's owner, emptied once the walk is over: the readers keep
// copies, no views, so the text (up to kMaxTraceBytes) is not held while they link kernels to launches.
TraceDocument parse(const TextBuffer& text, const std::string& name, TextBuffer* release, uintmax_t op_bytes = 0) {
  KinetoReader kineto(name);
  EtReader et(name);
  kineto.expect_events(text, op_bytes);
  json::for_each_root_field(text, name, [&](std::string_view key, simdjson::ondemand::value v) {
    if (!kineto.field(key, v)) et.field(key, v);
  });
  if (release) *release = TextBuffer{};
  TraceDocument d;
  if (kineto.saw_events()) {
    d.format = TraceFormat::Kineto;
    d.kineto = kineto.finish();
  } else if (et.saw_nodes()) {
    d.format = TraceFormat::Execution;
    d.execution = et.finish();
  } else {
    throw InputError(name + ": neither a Kineto trace (root key traceEvents) nor an execution trace (root key nodes)");
  }
  return d;
}

}  // namespace

TraceDocument parse_trace_document(const TextBuffer& text, const std::string& name) { return parse(text, name, nullptr); }

TraceDocument read_trace_document(const std::string& path, uintmax_t op_bytes) {
  TextBuffer text = read_text_file(path);
  return parse(text, path, &text, op_bytes);
}

}  // namespace stepsim::trace
