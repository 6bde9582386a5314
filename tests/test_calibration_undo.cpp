// A calibration changes every later nccl-model result of its GPU and links (issue 47 item 5): `calibrate comm` says
// where it wrote and how to undo it, every result that uses the store says so, and `calibrate remove` undoes it.
#include <string>

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace stepsim {
namespace {

const std::string kComm = "comm --collective all_reduce --gpus 8 --sizes 32K --set cluster.gpu=A100-80GB "
                          "--set cluster.intra_node.bandwidth_GBps=300 --model nccl";

// The time column of comm's one row.
std::string row_time(const std::string& out) {
  const size_t at = out.find("\n           32768");
  return at == std::string::npos ? "" : out.substr(at + 17, 13);
}

TEST(CalibrationUndo, AStoredFitIsNamedWhereverItIsUsedAndRemoveUndoesIt) {
  const std::string store = test::temp_dir() + "undo.sqlite";
  std::remove(store.c_str());
  const test::CliResult fit = test::run_cli("calibrate comm --nccl-tests " + test::source_dir() +
                                            "/../shared/data/nccl-tests/a100-8gpu-all_reduce.csv --store " + store);
  ASSERT_EQ(fit.code, 0) << fit.output;
  EXPECT_NE(fit.output.find("stepsim calibrate remove 1 --store " + store + " undoes this"), std::string::npos)
      << fit.output;

  const test::CliResult profile = test::run_cli(kComm + " --store none");
  const test::CliResult used = test::run_cli(kComm + " --store " + store);
  ASSERT_EQ(used.code, 0) << used.output;
  EXPECT_NE(used.output.find("# note: NCCL parameters from the calibration store " + store + " (row 1, fitted for "
                             "A100-80GB at intra=300GBps,inter=400Gbps)"),
            std::string::npos)
      << used.output;
  EXPECT_EQ(profile.output.find("calibration store"), std::string::npos) << profile.output;
  EXPECT_NE(row_time(used.output), row_time(profile.output));  // the fit moved the 32 KiB time

  // A job under comm_model nccl says so too.
  const std::string job = test::source_dir() + "/examples/llama2-7b-8.yaml";
  const test::CliResult sim =
      test::run_cli("simulate " + job + " --set cluster.gpu=A100-80GB --set cluster.intra_node.bandwidth_GBps=300 "
                    "--set cluster.inter_node.bandwidth_Gbps=400 --set simulation.comm_model=nccl "
                    "--set simulation.calibration_store=" + store);
  ASSERT_EQ(sim.code, 0) << sim.output;
  EXPECT_NE(sim.output.find("NCCL parameters from the calibration store " + store), std::string::npos) << sim.output;

  const test::CliResult removed = test::run_cli("calibrate remove 1 --store " + store);
  ASSERT_EQ(removed.code, 0) << removed.output;
  EXPECT_NE(removed.output.find("# removed 1 row from " + store), std::string::npos) << removed.output;
  const test::CliResult after = test::run_cli(kComm + " --store " + store);
  EXPECT_EQ(after.output.find("calibration store"), std::string::npos) << after.output;
  EXPECT_EQ(row_time(after.output), row_time(profile.output));

  const test::CliResult again = test::run_cli("calibrate remove 1 --store " + store);
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.output.find(store + ": no NCCL calibration row 1"), std::string::npos) << again.output;
  EXPECT_EQ(test::run_cli("calibrate remove --compute hopper --store " + store).code, 2);
  EXPECT_EQ(test::run_cli("calibrate remove --store " + store).code, 2);
  EXPECT_EQ(test::run_cli("calibrate remove 1 --store " + test::temp_dir() + "no-such-store.sqlite").code, 2);
}

}  // namespace
}  // namespace stepsim
