#pragma once
#include <string>

namespace stepsim::api {

// Writes `text` to `path`; InputError naming the path and `what` when it cannot.
void write_output_file(const std::string& path, const std::string& text, const std::string& what);

}  // namespace stepsim::api
