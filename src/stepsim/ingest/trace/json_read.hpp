#pragma once
// simdjson On-Demand helpers shared by the trace readers (src/stepsim/ingest/trace/, src/stepsim/compare/).
// Every accessor is lenient about types (a number where a string was expected yields the default) so that
// unexpected but well-formed JSON is skipped, while malformed JSON still throws simdjson_error.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "stepsim/ingest/trace/text_buffer.hpp"

namespace stepsim::trace::json {

namespace od = simdjson::ondemand;

// simdjson's error codes as exceptions (the readers catch simdjson_error and name the file).
inline void throw_if(simdjson::error_code e) {
  if (e) throw simdjson::simdjson_error(e);
}

// Integer value of a number (an integral double is accepted); nullopt for other types or out of range.
std::optional<int64_t> int_of(od::value v);
// A number or a numeric string ("123"); nullopt otherwise.
std::optional<int64_t> int_or_string_of(od::value v);
// A string; nullopt for other types.
std::optional<std::string> string_of(od::value v);
// A field's key and a string value as views: into the document's own text when they hold no escape (the usual
// case), so that nothing is copied into simdjson's string buffer, which would otherwise grow by every key and string
// of a trace read (hundreds of MB for a large trace); unescaped through that buffer only when they do. Views live as
// long as the parser and the text. string_view_of is false for a value that is not a string.
std::string_view key_of(od::field& f);
bool string_view_of(od::value v, std::string_view& out);
// Microseconds as Kineto writes them (integer or decimal) to integer nanoseconds, decimals beyond the
// nanosecond truncated; nullopt for other types or values beyond +-2^62 ns.
std::optional<int64_t> micros_to_ns(od::value v);
// "[0, 1, 2]" (PyTorch writes process-group ranks as a string) or a JSON array of integers; at most
// `limit` entries are kept.
std::vector<int> int_list_of(od::value v, size_t limit);

// Calls each(object) for every object element of a Chrome trace's traceEvents array, skipping other elements
// (viewers ignore them too); malformed JSON throws simdjson_error.
void for_each_event(od::array events, const std::function<void(od::object)>& each);

// Walks the root object of the document in `text` (padded, at most kMaxTraceBytes), calling field(key, value) for
// each member in order. InputError naming `name` when the text is over the limit, not a JSON object, or not valid
// JSON (a simdjson_error thrown by `field` included).
void for_each_root_field(const TextBuffer& text, const std::string& name,
                         const std::function<void(std::string_view key, od::value v)>& field);

}  // namespace stepsim::trace::json
