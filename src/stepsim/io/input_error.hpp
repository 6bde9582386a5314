#pragma once
// InputError: the one exception type for bad user input. The CLI maps it to exit code 2 and prints
// what() as a single line, so the message must name the file (when there is one), the key or line,
// and the rule that was broken.
#include <stdexcept>
#include <string>

namespace stepsim {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& msg) : std::runtime_error(msg) {}
};

}  // namespace stepsim
