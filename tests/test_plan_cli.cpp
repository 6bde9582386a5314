// stepsim plan on the command line: errors exit 2 with one line, the memory map agrees with `stepsim memory`,
// output is the same run to run.
#include <algorithm>

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace stepsim {
namespace {

std::string tiny_job() { return test::write_temp("plan-tiny.yaml", test::small_gpt_yaml(1, 1, 16, 32)); }

void expect_one_line_error(const std::string& args, const std::string& names) {
  const test::CliResult r = test::run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_NE(r.output.find(names), std::string::npos) << r.output;
}

TEST(PlanCli, BadInputExitsTwoWithOneLine) {
  const std::string job = tiny_job();
  expect_one_line_error("plan " + job + " --gpus 12", "--gpus 12");
  expect_one_line_error("plan " + job + " --top 0", "--top");
  expect_one_line_error("plan " + job + " --objective fastest", "--objective");
  expect_one_line_error("plan " + job + " --objective e2e", "--steps");
  expect_one_line_error("plan " + job + " --steps 10", "--steps");
  expect_one_line_error("plan " + job + " --csv x.csv", "--csv");
  expect_one_line_error("plan " + job + " --price -1", "--price");
  expect_one_line_error("plan " + job + " --gpus abc", "--gpus");
}

TEST(PlanCli, SameOutputTwice) {
  const std::string job = tiny_job();
  const std::string args = "plan " + job + " --gpus 16 --global-batch 32 --top 5 --simulate 2";
  const test::CliResult a = test::run_cli(args + " --threads 1"), b = test::run_cli(args + " --threads 2");
  ASSERT_EQ(a.code, 0) << a.output;
  EXPECT_EQ(a.output, b.output);
  EXPECT_NE(a.output.find("rule tp-within-node"), std::string::npos);
  EXPECT_NE(a.output.find("layout variants: TP communication overlap off/on (tpo)"), std::string::npos);
  EXPECT_NE(a.output.find("not searched: ZeRO-3"), std::string::npos);
}

// Each cell's fits / OOM is what `stepsim memory` says for that (TP, PP). Global batch 64 of 16k-token sequences
// on a 4096-wide model puts some cells over 80 GB.
TEST(PlanCli, MemoryMapMatchesTheMemoryCommand) {
  const std::string job = test::write_temp(
      "plan-map.yaml",
      "model: {name: mid, num_layers: 16, hidden_size: 6144, num_attention_heads: 48, ffn_hidden_size: 24576,"
      " vocab_size: 50000, seq_length: 8192}\n"
      "parallelism: {tensor: 1}\ntraining: {micro_batch_size: 1, global_batch_size: 64}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 16, gpus_per_node: 8}\n");
  const std::string csv = test::temp_dir() + "map.csv";
  const test::CliResult r = test::run_cli("plan " + job + " --gpus 16 --memory-map --csv " + csv);
  ASSERT_EQ(r.code, 0) << r.output;
  std::istringstream in(test::read_file(csv));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "tensor,pipeline,data,status,peak_memory_bytes,capacity_bytes,headroom_bytes,reason");
  int checked = 0, fits = 0, oom = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string t, p, d, status;
    std::getline(f, t, ',');
    std::getline(f, p, ',');
    std::getline(f, d, ',');
    std::getline(f, status, ',');
    if (status == "invalid") continue;
    const test::CliResult m = test::run_cli("memory " + job + " --set cluster.num_gpus=16 --set parallelism.tensor=" + t +
                                            " --set parallelism.pipeline=" + p +
                                            (t == "1" ? "" : " --set parallelism.sequence_parallel=true"));
    ASSERT_EQ(m.code, 0) << m.output;
    const bool says_fit = m.output.find("does NOT fit") == std::string::npos;
    EXPECT_EQ(status == "fits", says_fit) << "TP " << t << " PP " << p << "\n" << m.output;
    (status == "fits" ? fits : oom)++;
    ++checked;
  }
  EXPECT_GE(checked, 6);
  EXPECT_GE(fits, 1);
  EXPECT_GE(oom, 1);
}

// Issue 6 item 6: `mpirun -n 2 stepsim plan ...` splits the candidates over two processes; the ranked plans
// (JSON and text) are byte-identical to one process.
TEST(PlanCli, TwoMpiProcessesGiveTheSameResultAsOne) {
#ifndef STEPSIM_MPIEXEC
  GTEST_SKIP() << "built without MPI (install libopenmpi-dev openmpi-bin)";
#else
  const std::string job = tiny_job();
  const std::string dir = test::temp_dir();
  const std::string args = " plan " + job + " --gpus 16 --global-batch 32 --top 8 --simulate 3 --threads 1 --json ";
  const test::CliResult one = test::run_cli(args.substr(1) + dir + "one.json");
  ASSERT_EQ(one.code, 0) << one.output;
  // OpenMPI refuses root unless told; the test machine's container runs as root.
  // Under the sanitizer build, LeakSanitizer reports OpenMPI's own allocations at exit (libmpi, not stepsim).
  const std::string cmd = "ASAN_OPTIONS=detect_leaks=0 " + std::string(STEPSIM_MPIEXEC) + " -n 2 --oversubscribe" +
                          (::getuid() == 0 ? " --allow-run-as-root" : "") + " " + STEPSIM_BINARY + args + dir +
                          "two.json 2>" + dir + "mpi-stderr.txt";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int status = pclose(f);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << test::read_file(dir + "mpi-stderr.txt");
  EXPECT_EQ(out, one.output);
  EXPECT_EQ(test::read_file(dir + "two.json"), test::read_file(dir + "one.json"));
#endif
}

}  // namespace
}  // namespace stepsim
