#include "stepsim/compare/trace_format.hpp"

#include <algorithm>

#include <simdjson.h>

#include "stepsim/spec/input_error.hpp"

namespace stepsim::compare {

namespace od = simdjson::ondemand;

namespace {
void throw_if(simdjson::error_code e) {
  if (e) throw simdjson::simdjson_error(e);
}
}  // namespace

TraceKind peek_trace_kind(const trace::TextBuffer& text, const std::string& name) {
  if (text.size > trace::kMaxTraceBytes)
    throw InputError(name + ": the trace is larger than the limit of " + std::to_string(trace::kMaxTraceBytes) +
                     " bytes");
  bool stepsim = false, events = false;
  try {
    od::parser parser(std::max<size_t>(text.size, 64));
    od::document doc = parser.iterate(text.data.get(), text.size, text.capacity);
    od::object root;
    const auto err = doc.get_object().get(root);
    if (err == simdjson::INCORRECT_TYPE) throw InputError(name + ": a trace must be a JSON object");
    throw_if(err);
    for (auto f : root) {
      const std::string_view key = f.unescaped_key();
      od::value v = f.value();
      if (key == "traceEvents") {
        od::array a;
        if (v.get_array().get(a)) throw InputError(name + ": traceEvents must be an array");
        events = true;  // the array itself is skipped unread
      } else if (key == "otherData") {
        od::object o;
        if (v.get_object().get(o)) continue;
        for (auto g : o) {
          if (g.unescaped_key().value() != "generator") continue;
          std::string_view s;
          if (!g.value().get_string().get(s)) stepsim = s == "stepsim";
        }
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    throw InputError(name + ": not valid JSON (simdjson: " + e.what() + ")");
  }
  if (!events) throw InputError(name + ": not a Chrome trace (no root key traceEvents)");
  return stepsim ? TraceKind::Stepsim : TraceKind::Kineto;
}

}  // namespace stepsim::compare
