#pragma once
// Quoting user input in an error message: keep the message on one printable line and short.
#include <string>
#include <string_view>

namespace stepsim::spec {

inline std::string printable(std::string_view s, size_t max_len = 64) {
  std::string out;
  for (char c : s) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  return out;
}

}  // namespace stepsim::spec
