#pragma once
// A string as a JSON string literal, for the hand-written JSON of the side-by-side trace and event args.
#include <string>

namespace stepsim::compare {

inline std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;  // control characters dropped
  }
  return o + "\"";
}

}  // namespace stepsim::compare
