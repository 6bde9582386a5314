#pragma once
// ProgressBar: one line on a terminal, redrawn in place at most ten times a second, with the done count, the rate and
// the time left: `estimating plans [#######.......]  47 %  12,480/26,400  3,120/s  ETA 4 s`. Enabled only when
// asked (the commands enable it when stdout and stderr are terminals and --quiet is not given), so piped or
// redirected output never holds it. Thread-safe: plan and validate report from worker threads.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include "stepsim/io/progress.hpp"

namespace stepsim::report {

class ProgressBar {
 public:
  // Bar: the line redrawn in place (a terminal). Lines: when piped, a plain line for a stage that has run
  // kLinePeriod, and every kLinePeriod after ("stepsim: estimating plans 47 %  12,480/26,400 after 20 s"), so a log of
  // a long search shows it is alive. Off: nothing.
  enum class Mode { Off, Bar, Lines };
  static constexpr std::chrono::seconds kLinePeriod{10};

  // Draws on `out` when `enabled` (a bar).
  ProgressBar(std::FILE* out, bool enabled);
  ProgressBar(std::FILE* out, Mode mode);
  // A bar on a terminal, lines when stderr is piped or redirected, nothing when `quiet`.
  static Mode mode_for(bool quiet);
  ~ProgressBar();  // clears the line
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(std::string_view what, int64_t done, int64_t total);
  // Erases the bar, so that what the command prints next starts on a clean line.
  void clear();
  // The callback for the library (empty when disabled: the library then skips its bookkeeping).
  ProgressFn callback();

  // The piped line for these figures: "stepsim: <what> <pct> %  <done>/<total> after <elapsed>".
  static std::string plain_line(std::string_view what, int64_t done, int64_t total, double elapsed_s);
  // The line drawn for these figures (no terminal codes), for tests: `elapsed_s` since the current stage began.
  static std::string line(std::string_view what, int64_t done, int64_t total, double elapsed_s, int width = 24);
  // True when both stdout and stderr are terminals.
  static bool terminal();

 private:
  std::FILE* out_;
  Mode mode_ = Mode::Off;
  std::mutex mu_;
  std::string what_;
  std::chrono::steady_clock::time_point stage_start_{}, last_draw_{};
  bool drawn_ = false;
};

}  // namespace stepsim::report
