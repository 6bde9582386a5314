#pragma once
// Rank lists as users write them: "0-7,64,100-103".
#include <string>
#include <vector>

namespace stepsim::spec {

// Parses and checks every rank is in [0, world). Throws InputError naming `what` (e.g. "--trace-ranks").
std::vector<int> parse_rank_list(const std::string& text, int world, const std::string& what);

}  // namespace stepsim::spec
