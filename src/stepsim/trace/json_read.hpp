#pragma once
// Internal to src/stepsim/trace/: simdjson On-Demand helpers shared by the Kineto and execution-trace readers.
// Every accessor is lenient about types (a number where a string was expected yields the default) so that
// unexpected but well-formed JSON is skipped, while malformed JSON still throws simdjson_error.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

namespace stepsim::trace::json {

namespace od = simdjson::ondemand;

// Integer value of a number (an integral double is accepted); nullopt for other types or out of range.
std::optional<int64_t> int_of(od::value v);
// A number or a numeric string ("123"); nullopt otherwise.
std::optional<int64_t> int_or_string_of(od::value v);
// A string; nullopt for other types.
std::optional<std::string> string_of(od::value v);
// Microseconds as Kineto writes them (integer or decimal) to integer nanoseconds, decimals beyond the
// nanosecond truncated; nullopt for other types or values beyond +-2^62 ns.
std::optional<int64_t> micros_to_ns(od::value v);
// "[0, 1, 2]" (PyTorch writes process-group ranks as a string) or a JSON array of integers; at most
// `limit` entries are kept.
std::vector<int> int_list_of(od::value v, size_t limit);

}  // namespace stepsim::trace::json
