#include "stepsim/input/strict_json.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"
#include "stepsim/io/printable.hpp"

namespace stepsim::spec {
namespace {

using nlohmann::json;

// Real configs nest 3-4 levels; the cap keeps hostile "[[[[..." from costing memory and time.
constexpr int kMaxDepth = 64;

// Refuses nesting beyond kMaxDepth before the parser builds the tree. Brackets inside strings do
// not count; malformed text is left for the parser to report.
void check_depth(std::string_view text, const std::string& source) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        throw InputError(source + ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

}  // namespace

nlohmann::json parse_strict_json(const std::string& text, const std::string& source) {
  if (text.size() > kMaxInputFileBytes)
    throw InputError(source + ": larger than 16 MiB (" + std::to_string(text.size()) + " bytes)");
  check_depth(text, source);
  nlohmann::json j;
  // nlohmann keeps the last of two equal keys in an object silently; a config naming a key twice is refused, as a job
  // file's duplicate YAML keys are.
  std::vector<std::vector<std::string>> object_keys;
  const json::parser_callback_t no_duplicates = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      object_keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      object_keys.pop_back();
    } else if (event == json::parse_event_t::key && !object_keys.empty()) {
      const std::string key = parsed.get<std::string>();
      std::vector<std::string>& seen = object_keys.back();
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        throw InputError(source + ": key " + printable(key) + " appears twice in one object (JSON readers keep one of "
                                                              "the two silently; say it once)");
      }
      seen.push_back(key);
    }
    return true;
  };
  try {
    j = json::parse(text, no_duplicates);
  } catch (const json::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: <detail>".
    std::string detail = e.what();
    if (auto pos = detail.find(": "); pos != std::string::npos) detail = detail.substr(pos + 2);
    throw InputError(source + ": malformed JSON at byte " + std::to_string(e.byte) + ": " + printable(detail, 200));
  } catch (const json::exception& e) {
    // e.g. out_of_range.406 for a number literal beyond double range ("1e400"); no byte offset.
    std::string detail = e.what();
    if (auto pos = detail.find("] "); pos != std::string::npos) detail = detail.substr(pos + 2);
    throw InputError(source + ": malformed JSON: " + printable(detail, 200));
  }
  return j;
}

}  // namespace stepsim::spec
