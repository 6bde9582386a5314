#pragma once
#include <functional>
#include <ostream>
#include <string>

namespace stepsim::api {

// Writes `text` to `path` ("-": standard output, after the command's own text; `simulate --quiet` prints none);
// InputError naming the path and `what` when it cannot.
void write_output_file(const std::string& path, const std::string& text, const std::string& what);
// Streams what `write` produces to `path` (a large output is never held whole); the same errors.
void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write, const std::string& what);

}  // namespace stepsim::api
