#include "stepsim/compare/trace_format.hpp"

#include <simdjson.h>

#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/json_read.hpp"

namespace stepsim::compare {

namespace od = simdjson::ondemand;

TraceKind peek_trace_kind(const trace::TextBuffer& text, const std::string& name) {
  bool stepsim = false, events = false;
  trace::json::for_each_root_field(text, name, [&](std::string_view key, od::value v) {
    if (key == "traceEvents") {
      od::array a;
      if (v.get_array().get(a)) throw InputError(name + ": traceEvents must be an array");
      events = true;  // the array itself is skipped unread
    } else if (key == "otherData") {
      od::object o;
      if (v.get_object().get(o)) return;
      for (auto g : o) {
        if (g.unescaped_key().value() != "generator") continue;
        std::string_view s;
        if (!g.value().get_string().get(s)) stepsim = s == "stepsim";
      }
    }
  });
  if (!events) throw InputError(name + ": not a Chrome trace (no root key traceEvents)");
  return stepsim ? TraceKind::Stepsim : TraceKind::Kineto;
}

}  // namespace stepsim::compare
