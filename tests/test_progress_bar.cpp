// The progress bar of plan, validate, simulate and trace import (issue 16 item 4): its line by hand, silence when
// output is not a terminal, and the bar drawn then erased on a real pseudo-terminal (util-linux `script`).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "stepsim/report/progress_bar.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

using report::ProgressBar;

// 12,480 of 26,400 after 4 s: 47 % (11 of 24 cells), 3,120 per second, (26,400 - 12,480) / 3,120 = 4.46 -> 5 s left.
TEST(ProgressBar, LineByHand) {
  EXPECT_EQ(ProgressBar::line("estimating plans", 12480, 26400, 4.0),
            "estimating plans [###########.............]  47 %  12,480/26,400  3,120/s  ETA 5 s");
  // Done: no ETA; nothing measured yet: no rate.
  EXPECT_EQ(ProgressBar::line("simulating runs", 37, 37, 2.0, 10), "simulating runs [##########] 100 %  37/37  18/s");
  EXPECT_EQ(ProgressBar::line("reading traces", 0, 3, 0.0, 4), "reading traces [....]   0 %  0/3");
  // 150 s left reads in minutes.
  EXPECT_EQ(ProgressBar::line("simulating", 1, 151, 1.0, 2), "simulating [..]   0 %  1/151  1/s  ETA 2 min 30 s");
}

TEST(ProgressBar, DisabledBarDrawsNothingAndGivesNoCallback) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar bar(f, false);
    EXPECT_FALSE(bar.callback());
    bar.update("x", 1, 2);
    bar.clear();
  }
  EXPECT_EQ(std::ftell(f), 0);
  {
    ProgressBar bar(f, true);
    ASSERT_TRUE(bar.callback());
    bar.callback()("estimating plans", 1, 2);
  }  // the destructor erases the line
  std::rewind(f);
  std::string drawn(256, '\0');
  drawn.resize(std::fread(drawn.data(), 1, drawn.size(), f));
  std::fclose(f);
  EXPECT_EQ(drawn, "\r\033[Kestimating plans [############............]  50 %  1/2\r\033[K");
}

// Piped, a stage that runs past kLinePeriod prints a plain line, and another each period; a short one nothing.
TEST(ProgressBar, PipedLinesAppearOnlyForLongStages) {
  EXPECT_EQ(ProgressBar::plain_line("estimating plans", 12480, 26400, 20.0),
            "stepsim: estimating plans 47 %  12,480/26,400 after 20 s");
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar bar(f, ProgressBar::Mode::Lines);
    ASSERT_TRUE(bar.callback());
    for (int i = 0; i <= 100; ++i) bar.callback()("estimating plans", i, 100);  // at once: shorter than a period
    bar.clear();
  }
  EXPECT_EQ(std::ftell(f), 0);
  std::fclose(f);
  EXPECT_EQ(ProgressBar::mode_for(true), ProgressBar::Mode::Off);
}

// Through a pipe (every other CLI test) the output carries no bar; on a pseudo-terminal validate draws it on stderr
// and erases it before the table.
TEST(ProgressBar, DrawnOnlyOnATerminal) {
  const std::string csv = std::string(STEPSIM_SHARED_DIR) + "/data/published-runs/published_runs.csv";
  const std::string args = "validate " + csv + " --only NAR21-T1-01,MLM24-H100-1.7B";
  const std::string env = "STEPSIM_CALIBRATION_DB=" + test::temp_dir() + "/none.sqlite";
  const auto piped = test::run_cli_env(env, args);
  EXPECT_EQ(piped.output.find("simulating runs ["), std::string::npos) << piped.output;
  const std::string log = test::temp_dir() + "/tty.log";
  const std::string cmd = env + " script -qec '" + std::string(STEPSIM_BINARY) + " " + args +
                          "' " + log + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string tty = test::read_file(log);
  EXPECT_NE(tty.find("simulating runs ["), std::string::npos) << tty;
  EXPECT_NE(tty.find("\r\033[K"), std::string::npos);
  EXPECT_NE(tty.find("NAR21-T1-01"), std::string::npos);  // the table still follows
}

}  // namespace
}  // namespace stepsim
