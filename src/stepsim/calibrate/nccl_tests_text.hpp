#pragma once
// Internals of the nccl-tests reader (nccl_tests_reader.hpp): the text-format parser and the strict number parsers
// it shares with the CSV path and the kernel-record reader.
#include <cstdint>
#include <string>
#include <string_view>

#include "stepsim/calibrate/nccl_tests_reader.hpp"

namespace stepsim::cost {

// Whole-token parsers (no sign for u64, no spaces, no trailing text).
bool parse_u64(std::string_view s, uint64_t& out);
bool parse_int(std::string_view s, int& out);
// A finite decimal number; `half_unit` receives half a unit of its last printed digit ("3324.7" -> 0.05,
// "27257" -> 0.5, "1.5e+03" -> 50).
bool parse_number(std::string_view s, double& out, double* half_unit = nullptr);

// The text format alone; rows are not cross-checked and an empty result is not an error here.
NcclTestsFile parse_nccl_tests_text(std::string_view text, const std::string& path);

}  // namespace stepsim::cost
