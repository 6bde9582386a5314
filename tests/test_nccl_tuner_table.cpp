// data/nccl-tuner.yaml: the shipped table holds NCCL 2.30.7's constants, strict loading names the file and the key,
// and the file, not the code, drives `comm --model nccl`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "stepsim/catalog/nccl_tuner_table.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace {

using stepsim::InputError;
using stepsim::cost::NcclTunerTable;

std::string shipped_text() { return stepsim::test::read_file(stepsim::hw::data_dir() + "/nccl-tuner.yaml"); }

std::string with(const std::string& from, const std::string& to) {
  std::string s = shipped_text();
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

void expect_error(const std::string& name, const std::string& text, std::initializer_list<std::string> parts) {
  const std::string path = stepsim::test::temp_dir() + name;
  std::ofstream(path) << text;
  try {
    NcclTunerTable::load(path);
    FAIL() << "no error for " << name;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
  }
}

TEST(NcclTunerTable, ShippedTableHoldsNcclsConstants) {
  const NcclTunerTable& t = stepsim::catalog::shipped().nccl_tuner;
  // Spot checks against shared/data/nccl_model_facts.md §2-§7 (tree 0, ring 1, ..., pat 6; LL, LL128, Simple).
  EXPECT_DOUBLE_EQ(t.base_latency_us[1][2], 8.4);     // Ring Simple base latency
  EXPECT_DOUBLE_EQ(t.hw_latency_us[0][1][2], 3.4);    // NVLink Ring Simple
  EXPECT_DOUBLE_EQ(t.hw_latency_us[2][5][2], 20.9);   // NET NVLS-tree Simple
  EXPECT_DOUBLE_EQ(t.ll_max_bw_GBps[2][0], 141.0);    // Hopper, one node
  EXPECT_DOUBLE_EQ(t.per_channel_tree_ll128[3][1], 31.67);
  EXPECT_DOUBLE_EQ(t.nvls_efficiency[2], 0.85);
  EXPECT_DOUBLE_EQ(t.nvls_efficiency[3], 0.74);
  EXPECT_DOUBLE_EQ(t.tree_correction[2][11], 0.5);    // Simple at 64 B x 2^11 = 128 KiB
  EXPECT_DOUBLE_EQ(t.max_threads[1], 640);
  EXPECT_DOUBLE_EQ(t.thread_threshold_bytes[2], 64);
  EXPECT_DOUBLE_EQ(t.tree_ll128_bus_factor_one_node, 7.0 / 9.0);
  EXPECT_DOUBLE_EQ(t.tree_ll128_bus_factor_multi_node, 120.0 / 128.0);
  EXPECT_DOUBLE_EQ(t.ring_plateau_sm80_plus, 1.4);
  EXPECT_DOUBLE_EQ(t.net_overhead_us_amd, 2.0);
  EXPECT_FALSE(t.source.empty());
}

TEST(NcclTunerTable, StrictLoadingNamesFileAndKey) {
  expect_error("missing.yaml", with("  pat: [8.0, 8.0, 8.0]\n", ""), {"base_latency_us.pat", "missing"});
  expect_error("unknown.yaml", with("nvls_efficiency: {", "nvls_efficiency: {rubin: 0.5, "),
               {"nvls_efficiency.rubin", "unknown key"});
  expect_error("short_row.yaml", with("ring: [6.6, 14.0, 8.4]", "ring: [6.6, 14.0]"), {"base_latency_us.ring", "3 numbers"});
  expect_error("negative.yaml", with("hopper: [141.0, 45.0, 35.0]", "hopper: [141.0, -45.0, 35.0]"),
               {"ll_max_bw_GBps.hopper[1]", "[0,"});
  expect_error("above_one.yaml", with("hopper: 0.85", "hopper: 1.85"), {"nvls_efficiency.hopper", "[0, 1]"});
  expect_error("not_number.yaml", with("pat_per_rank_us: 2.8", "pat_per_rank_us: fast"),
               {"refinements.pat_per_rank_us", "number"});
  expect_error("threads.yaml", with("max_threads: {ll: 512", "max_threads: {ll: 16"), {"max_threads.ll", "warp"});
  expect_error("syntax.yaml", "base_latency_us: {\n", {"malformed YAML"});
  EXPECT_THROW(NcclTunerTable::load("/nonexistent/nccl-tuner.yaml"), InputError);
}

TEST(NcclTunerTable, TheFileDrivesTheNcclModel) {
  // With the shipped table 8 x H100 all-reduce of 256 MiB runs NVLS (430 GB/s busbw); with Hopper's NVLS
  // efficiency set to 0 in a copy of data/, NCCL's tuner (and stepsim's) falls back to the ring.
  const std::string dir = stepsim::test::temp_dir() + "data-nvls-off";
  std::filesystem::remove_all(dir);
  std::filesystem::copy(stepsim::hw::data_dir(), dir, std::filesystem::copy_options::recursive);
  std::ofstream(dir + "/nccl-tuner.yaml") << with("hopper: 0.85", "hopper: 0.0");
  const std::string args = "comm --collective all_reduce --gpus 8 --gpus-per-node 8 --sizes 256M --model nccl --store none";
  const auto shipped = stepsim::test::run_cli(args);
  ASSERT_EQ(shipped.code, 0) << shipped.output;
  EXPECT_NE(shipped.output.find("nvls"), std::string::npos) << shipped.output;
  const auto changed = stepsim::test::run_cli_env("STEPSIM_DATA_DIR=" + dir, args);
  ASSERT_EQ(changed.code, 0) << changed.output;
  EXPECT_EQ(changed.output.find("nvls"), std::string::npos) << changed.output;
  EXPECT_NE(changed.output.find("ring"), std::string::npos) << changed.output;
}

}  // namespace
