#pragma once
// Size lists live in the library (api/size_range.hpp, used by the Python API too); these names keep the CLI's calls.
#include "stepsim/api/size_range.hpp"

namespace stepsim::cli {

using api::parse_size;
using api::parse_size_range;

}  // namespace stepsim::cli
