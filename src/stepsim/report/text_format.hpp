#pragma once
// printf-style formatting into a std::string for the text and HTML reports: one helper instead of a copy per file
// (copies of an anonymous-namespace helper also collide inside a unity batch).
#include <string>

namespace stepsim::report {

// One number in a printf format ("%.1f %%"); the result is at most 63 characters.
std::string format_number(const char* format, double v);

// Any printf format, any length.
std::string format_text(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace stepsim::report
