#include "stepsim/job/rank_list.hpp"

#include <sstream>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/yaml_reader.hpp"

namespace stepsim::spec {

std::vector<int> parse_rank_list(const std::string& text, int world, const std::string& what) {
  std::vector<int> out;
  std::stringstream ss(text);
  auto bad = [&](const std::string& rule) { throw InputError(what + " '" + text + "': " + rule); };
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) bad("empty entry");
    const auto dash = item.find('-', 1);
    int64_t lo = 0, hi = 0;
    if (dash == std::string::npos) {
      if (!parse_int64(item, lo)) bad("'" + item + "' is not a rank");
      hi = lo;
    } else if (!parse_int64(item.substr(0, dash), lo) || !parse_int64(item.substr(dash + 1), hi)) {
      bad("'" + item + "' is not a range like 0-7");
    }
    if (lo < 0 || hi < lo) bad("'" + item + "' must be a non-empty range of non-negative ranks");
    if (hi >= world) bad("rank " + std::to_string(hi) + " is outside 0.." + std::to_string(world - 1));
    if (hi - lo + out.size() > 100000) bad("more than 100000 ranks");
    for (int64_t r = lo; r <= hi; ++r) out.push_back(static_cast<int>(r));
  }
  if (out.empty()) bad("no ranks");
  return out;
}

}  // namespace stepsim::spec
