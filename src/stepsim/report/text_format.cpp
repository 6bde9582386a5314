#include "stepsim/report/text_format.hpp"

#include <cstdarg>
#include <cmath>
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

std::string counted(int64_t n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

std::string format_duration(double s) {
  if (s >= 86400 * 2) return format_number("%.2f days", s / 86400);
  if (s >= 3600) return format_number("%.2f h", s / 3600);
  if (s >= 120) return format_number("%.1f min", s / 60);
  return format_number("%.1f s", s);
}

std::string format_grouped(double v) {
  if (!std::isfinite(v)) return format_number("%g", v);
  const std::string digits = format_number("%.0f", std::fabs(v));
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return (v < 0 && digits != "0" ? "-" : "") + grouped;
}

std::string format_usd(double usd) {
  if (!std::isfinite(usd)) return format_number("%g USD", usd);
  if (std::fabs(usd) < 100) return format_number("%.2f USD", usd);
  return format_grouped(usd) + " USD";
}

}  // namespace stepsim::report
