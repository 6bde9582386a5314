#pragma once
// printf-style formatting into a std::string for the text and HTML reports: one helper instead of a copy per file
// (copies of an anonymous-namespace helper also collide inside a unity batch).
#include <cstdint>
#include <string>

namespace stepsim::report {

// One number in a printf format ("%.1f %%"); the result is at most 63 characters.
std::string format_number(const char* format, double v);

// Any printf format, any length.
std::string format_text(const char* format, ...) __attribute__((format(printf, 1, 2)));

// "1 micro-batch", "8 micro-batches": a count with its noun in the right number.
std::string counted(int64_t n, const char* singular, const char* plural);

// A duration as people read it: seconds below 2 minutes, then minutes, hours, and days from 2 days.
std::string format_duration(double s);

// A whole number with its thousands separated ("10,539,825"); the value rounded, its sign kept.
std::string format_grouped(double v);

// An amount of US dollars as people read it: cents below 100 USD, whole dollars with thousands separated above
// ("6,407,567 USD"); a negative amount keeps its sign.
std::string format_usd(double usd);

}  // namespace stepsim::report
