#include "stepsim/api/size_range.hpp"

#include <cctype>
#include <sstream>

#include "stepsim/io/input_error.hpp"

namespace stepsim::api {

uint64_t parse_size(const std::string& text, const std::string& option) {
  const std::string rule = option + " " + text + ": expected a size in bytes such as 4096, 64K, 8M or 1G";
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) throw InputError(rule);
  size_t pos = 0;
  uint64_t v = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    if (v > (1ull << 40)) throw InputError(rule);
    v = v * 10 + static_cast<uint64_t>(text[pos++] - '0');
  }
  int shift = 0;
  if (pos < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[pos]))) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: throw InputError(rule);
    }
    ++pos;
    if (pos < text.size() && std::toupper(static_cast<unsigned char>(text[pos])) == 'B') ++pos;
  }
  if (pos != text.size()) throw InputError(rule);
  if (v == 0 || v > (1ull << (40 - shift))) throw InputError(option + " " + text + ": must be 1 B .. 1T");
  return v << shift;
}

std::vector<uint64_t> parse_size_range(const std::string& text, const std::string& option) {
  std::vector<uint64_t> out;
  const auto dash = text.find('-');
  if (dash != std::string::npos) {
    const uint64_t lo = parse_size(text.substr(0, dash), option), hi = parse_size(text.substr(dash + 1), option);
    if (lo > hi) throw InputError(option + " " + text + ": the first size must not exceed the second");
    for (uint64_t s = lo; s <= hi && out.size() <= 64; s *= 2) out.push_back(s);
  } else {
    std::stringstream ss(text);
    for (std::string item; std::getline(ss, item, ',');) out.push_back(parse_size(item, option));
  }
  if (out.empty()) throw InputError(option + ": no sizes given");
  if (out.size() > 64) throw InputError(option + " " + text + ": more than 64 sizes");
  return out;
}

}  // namespace stepsim::api
