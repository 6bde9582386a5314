#pragma once
// Message-size lists as nccl-tests users write them: "1M-1G" (doubling), "8M", "1K,64K,1M"; K/M/G/T are
// binary (2^10...) as in nccl-tests' -b/-e options.
#include <cstdint>
#include <string>
#include <vector>

namespace stepsim::api {

// InputError naming `option` and the rule for anything else; at most 64 sizes, each 1 B .. 1 TiB.
std::vector<uint64_t> parse_size_range(const std::string& text, const std::string& option);
uint64_t parse_size(const std::string& text, const std::string& option);

}  // namespace stepsim::api
