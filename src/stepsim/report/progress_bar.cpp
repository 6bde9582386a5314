#include "stepsim/report/progress_bar.hpp"

#include <algorithm>
#include <cmath>
#include <unistd.h>

namespace stepsim::report {
namespace {

// 12480 -> "12,480" (counts are never negative).
std::string grouped(int64_t n) {
  const std::string digits = std::to_string(std::max<int64_t>(n, 0));
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

std::string seconds(double s) {
  if (s < 60) return std::to_string(static_cast<int>(std::ceil(s))) + " s";
  const int m = static_cast<int>(s / 60);
  return std::to_string(m) + " min " + std::to_string(static_cast<int>(s - 60 * m)) + " s";
}

}  // namespace

ProgressBar::ProgressBar(std::FILE* out, bool enabled) : ProgressBar(out, enabled ? Mode::Bar : Mode::Off) {}

ProgressBar::ProgressBar(std::FILE* out, Mode mode)
    : out_(out), mode_(out ? mode : Mode::Off) {}

ProgressBar::Mode ProgressBar::mode_for(bool quiet) {
  if (quiet) return Mode::Off;
  return terminal() ? Mode::Bar : Mode::Lines;
}

std::string ProgressBar::plain_line(std::string_view what, int64_t done, int64_t total, double elapsed_s) {
  total = std::max<int64_t>(total, 1);
  done = std::clamp<int64_t>(done, 0, total);
  const int pct = static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
  return "stepsim: " + std::string(what) + " " + std::to_string(pct) + " %  " + grouped(done) + "/" + grouped(total) +
         " after " + seconds(elapsed_s);
}

ProgressBar::~ProgressBar() { clear(); }

std::string ProgressBar::line(std::string_view what, int64_t done, int64_t total, double elapsed_s, int width) {
  total = std::max<int64_t>(total, 1);
  done = std::clamp<int64_t>(done, 0, total);
  const double f = static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(f * width);
  std::string s(what);
  s += " [" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '.') + "] ";
  const int pct = static_cast<int>(f * 100);
  s += (pct < 10 ? "  " : pct < 100 ? " " : "") + std::to_string(pct) + " %  " + grouped(done) + "/" + grouped(total);
  if (elapsed_s > 0 && done > 0) {
    const double rate = static_cast<double>(done) / elapsed_s;
    s += "  " + grouped(static_cast<int64_t>(rate)) + "/s";
    if (done < total) s += "  ETA " + seconds(static_cast<double>(total - done) / rate);
  }
  return s;
}

bool ProgressBar::terminal() { return isatty(STDOUT_FILENO) == 1 && isatty(STDERR_FILENO) == 1; }

void ProgressBar::update(std::string_view what, int64_t done, int64_t total) {
  if (mode_ == Mode::Off) return;
  const std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is drawing: this figure is stale in 100 ms anyway
  const auto now = std::chrono::steady_clock::now();
  if (what != what_) {
    what_ = what;
    stage_start_ = now;
    last_draw_ = now;
    if (mode_ == Mode::Lines) return;
  } else if (mode_ == Mode::Lines) {
    if (done >= total || now - last_draw_ < kLinePeriod) return;
    last_draw_ = now;
    const double elapsed = std::chrono::duration<double>(now - stage_start_).count();
    std::fprintf(out_, "%s\n", plain_line(what, done, total, elapsed).c_str());
    std::fflush(out_);
    return;
  } else if (done < total && now - last_draw_ < std::chrono::milliseconds(100)) {
    return;
  }
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - stage_start_).count();
  std::fprintf(out_, "\r\033[K%s", line(what, done, total, elapsed).c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressBar::clear() {
  if (mode_ != Mode::Bar) return;
  const std::lock_guard lock(mu_);
  if (!drawn_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

ProgressFn ProgressBar::callback() {
  if (mode_ == Mode::Off) return {};
  return [this](std::string_view what, int64_t done, int64_t total) { update(what, done, total); };
}

}  // namespace stepsim::report
