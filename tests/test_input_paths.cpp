// Every reader of a file a user hands in says what the path is when it is not a file it can read (a directory, a
// device), before reading it, and a device never makes a reader grow without bound (issue 15 items 15 and 18).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.hpp"

namespace stepsim {
namespace {

const std::string kLog = test::source_dir() + "/../shared/data/real/nccl-logs/nvidia-nccl-issue-1193.log";

TEST(InputPaths, ADirectoryIsNamedAsOneByEveryReader) {
  const std::string dir = test::temp_dir() + "a-directory";
  std::filesystem::create_directories(dir);
  const std::string job = test::source_dir() + "/examples/llama2-7b-8.yaml";
  struct Case {
    std::string args, what;
  };
  for (const Case& c : {
           Case{"profile nccl --log " + kLog + " --nsys " + dir, "the Nsight Systems SQLite export (--nsys)"},
           Case{"profile nccl --log " + kLog + " --model-config " + dir, "the model config (--model-config)"},
           Case{"trace import " + dir + " --out " + test::temp_dir() + "imported", "the trace"},
           Case{"compare " + dir + " " + dir, "the trace"},
           Case{"trace extrapolate " + dir + " --job " + job + " --out " + test::temp_dir() + "extrapolated", "the trace"},
           Case{"slowdown eval " + test::source_dir() + "/data/slowdown/echo_slowdowns.csv --model " + dir, "slowdown model"},
           Case{"slowdown train " + dir + " --out " + test::temp_dir() + "model.json", "slowdown dataset"},
       }) {
    const auto r = test::run_cli(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(dir + ": cannot read " + c.what + ": it is a directory, not a file"), std::string::npos)
        << c.args << "\n" << r.output;
  }
}

// Issue 48 item 9: the same log given twice (or under two spellings) had its collectives counted twice.
TEST(InputPaths, AFileGivenTwiceIsRefused) {
  const std::string again = test::source_dir() + "/../shared/data/real/nccl-logs/../nccl-logs/nvidia-nccl-issue-1193.log";
  const auto r = test::run_cli("profile nccl --log " + kLog + " --log " + again);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--log: " + again + " is given twice"), std::string::npos) << r.output;
}

// /dev/zero as the model config used to be read whole: 12.6 GB of RSS and no answer within a minute. Now it is refused
// before a byte is read, and the command's peak memory stays small.
TEST(InputPaths, ADeviceIsRefusedBeforeItIsRead) {
  const auto r = test::run_cli("profile nccl --log " + kLog + " --model-config /dev/zero");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("/dev/zero: cannot read the model config (--model-config): not a regular file"),
            std::string::npos) << r.output;
  EXPECT_GT(r.peak_rss_bytes, int64_t{1} << 20);  // measured: any process holds more than 1 MiB
  EXPECT_LT(r.peak_rss_bytes, int64_t{1} << 30);
  const auto m = test::run_cli("slowdown eval " + test::source_dir() + "/data/slowdown/echo_slowdowns.csv --model /dev/zero");
  EXPECT_EQ(m.code, 2) << m.output;
  EXPECT_NE(m.output.find("/dev/zero: cannot read slowdown model: not a regular file"), std::string::npos) << m.output;
}

// A rank's workload file is read whole into a JSON tree: above 96 MiB it is refused by its size, before a byte is read
// (a sparse file of 129 MiB here, which costs no disk).
TEST(InputPaths, AnOversizedWorkloadFileIsRefusedByItsSize) {
  const std::string dir = test::temp_dir() + "big-workload/";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir + "rank0.json") << "{"; }
  std::filesystem::resize_file(dir + "rank0.json", (uintmax_t{129} << 20));
  const std::string job = test::write_temp("wl.yaml", test::small_gpt_yaml(1, 1, 1, 1));
  const auto r = test::run_cli("simulate " + job + " --workload " + dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("rank0.json: a rank's workload file is 135266304 bytes, more than the limit of 100663296"),
            std::string::npos) << r.output;
  EXPECT_LT(r.peak_rss_bytes, int64_t{1} << 30);
}

// Output paths are checked while the options are parsed, before any input is read: a bad output wins over a missing
// input, so no work is done for a result that cannot be written.
TEST(InputPaths, OutputPathsAreCheckedBeforeTheWork) {
  const std::string file = test::write_temp("not-a-folder", "x");
  struct Case {
    std::string args, message;
  };
  for (const Case& c : {
           Case{"profile nccl --log /nonexistent/log.txt --summary /nonexistent-folder/s.json",
                "--summary: /nonexistent-folder/s.json: its folder /nonexistent-folder does not exist"},
           Case{"trace import /nonexistent/trace.json --out " + file,
                "--out: " + file + " exists and is not a folder; give a folder to write into"},
           Case{"trace import /nonexistent/trace.json --out " + file + "/sub",
                "--out: " + file + "/sub: " + file + " is not a folder, so the folder cannot be created"},
           Case{"trace extrapolate /nonexistent/trace.json --job /nonexistent/job.yaml --out " + file,
                "--out: " + file + " exists and is not a folder"},
           Case{"validate /nonexistent/runs.csv --jobs-dir " + file, "--jobs-dir: " + file + " exists and is not a folder"},
       }) {
    const auto r = test::run_cli(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace stepsim
