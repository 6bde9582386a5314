#include "stepsim/report/text_format.hpp"

#include <cstdarg>
#include <cstdio>

namespace stepsim::report {

std::string format_number(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string format_text(const char* format, ...) {
  va_list ap, again;
  va_start(ap, format);
  va_copy(again, ap);
  const int n = std::vsnprintf(nullptr, 0, format, ap);
  va_end(ap);
  std::string out(static_cast<size_t>(n > 0 ? n : 0) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), format, again);
  va_end(again);
  out.pop_back();  // the terminating NUL vsnprintf wrote
  return out;
}

}  // namespace stepsim::report
