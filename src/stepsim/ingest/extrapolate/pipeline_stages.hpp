#pragma once
// Pipeline stages of a traced step: contiguous layer ranges, given by the user ("0-3,4-7") or balanced by time
// (the partition whose slowest stage, forward plus backward, is fastest).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stepsim::extrapolate {

// first/last layer (inclusive) of each stage. InputError naming --stages for a malformed list, ranges that are
// not contiguous from 0 to layers - 1, or a count other than `stages`; and when layers < stages.
std::vector<std::pair<int, int>> parse_stages(const std::string& spec, int stages, int layers);
std::vector<std::pair<int, int>> balance_stages(const std::vector<int64_t>& layer_ns, int stages);

}  // namespace stepsim::extrapolate
