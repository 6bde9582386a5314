#include "stepsim/trace/trace_document.hpp"

#include <algorithm>

#include "stepsim/spec/input_error.hpp"
#include "stepsim/trace/readers.hpp"

namespace stepsim::trace {

TraceDocument parse_trace_document(const TextBuffer& text, const std::string& name) {
  if (text.size > kMaxTraceBytes)
    throw InputError(name + ": the trace is larger than the limit of " + std::to_string(kMaxTraceBytes) + " bytes");
  KinetoReader kineto(name);
  EtReader et(name);
  try {
    simdjson::ondemand::parser parser(std::max<size_t>(text.size, 64));
    simdjson::ondemand::document doc = parser.iterate(text.data.get(), text.size, text.capacity);
    simdjson::ondemand::object root;
    if (doc.get_object().get(root)) throw InputError(name + ": a trace must be a JSON object");
    for (auto f : root) {
      std::string_view key = f.unescaped_key();
      simdjson::ondemand::value v = f.value();
      if (!kineto.field(key, v)) et.field(key, v);
    }
  } catch (const simdjson::simdjson_error& e) {
    throw InputError(name + ": not valid JSON (simdjson: " + e.what() + ")");
  }
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
