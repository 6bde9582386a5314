#include "stepsim/trace/trace_document.hpp"

#include "stepsim/spec/input_error.hpp"
#include "stepsim/trace/json_read.hpp"
#include "stepsim/trace/readers.hpp"

namespace stepsim::trace {

TraceDocument parse_trace_document(const TextBuffer& text, const std::string& name) {
  KinetoReader kineto(name);
  EtReader et(name);
  json::for_each_root_field(text, name, [&](std::string_view key, simdjson::ondemand::value v) {
    if (!kineto.field(key, v)) et.field(key, v);
  });
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

TraceDocument read_trace_document(const std::string& path) {
  return parse_trace_document(read_text_file(path), path);
}

}  // namespace stepsim::trace
