// The shipped constants as one value (src/stepsim/catalog/catalog.hpp): a second catalog reaches the models without
// touching the process's shipped one, and nothing below the command layer reads the shipped one by itself.
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

// A copy of data/ whose H100-SXM has twice the bf16 tensor-core rate of the shipped one.
std::string faster_h100_data_dir() {
  const std::string dir = test::temp_dir() + "catalog-faster-h100";
  fs::remove_all(dir);
  fs::copy(hw::data_dir(), dir, fs::copy_options::recursive);
  std::string gpus = test::read_file(dir + "/gpus.yaml");
  const std::string from = "    bf16_tflops: 989.5\n";
  const size_t at = gpus.find(from, gpus.find("- name: H100-SXM"));
  EXPECT_NE(at, std::string::npos) << "data/gpus.yaml's H100-SXM entry changed: update this test";
  gpus.replace(at, from.size(), "    bf16_tflops: 1979\n");
  std::ofstream(dir + "/gpus.yaml") << gpus;
  return dir;
}

TEST(Catalog, ASecondCatalogReachesTheModelsAndLeavesTheShippedOneAlone) {
  const catalog::Catalog faster = catalog::Catalog::load(faster_h100_data_dir());
  EXPECT_DOUBLE_EQ(faster.gpu("H100").bf16_flops, 1979e12);
  EXPECT_DOUBLE_EQ(catalog::shipped().gpu("H100").bf16_flops, 989.5e12);
  const spec::JobSpec job = test::job_from_yaml(test::small_gpt_yaml(2, 1, 4, 8));  // bf16 on H100-SXM
  const int64_t shipped = sim::run_simulation(catalog::shipped(), job, {0}).result.step_ns;
  const sim::Simulation fast = sim::run_simulation(faster, job, {0});
  EXPECT_LT(fast.result.step_ns, shipped);
  EXPECT_DOUBLE_EQ(fast.gpu.bf16_flops, 1979e12);  // the GPU the step ran on is the given catalog's
  EXPECT_EQ(sim::run_simulation(catalog::shipped(), job, {0}).result.step_ns, shipped);
}

TEST(Catalog, LoadNamesTheFileOfABadTable) {
  const std::string dir = faster_h100_data_dir();
  std::ofstream(dir + "/nccl-tuner.yaml") << "base_latency_us: {\n";
  const std::string e = test::error_of([&] { (void)catalog::Catalog::load(dir); });
  EXPECT_NE(e.find(dir + "/nccl-tuner.yaml"), std::string::npos) << e;
}

// Only the entry points (api/, cli/) ask for the process's shipped catalog; every layer below takes one.
TEST(Catalog, OnlyTheEntryPointsReadTheShippedCatalog) {
  const fs::path root = fs::path(STEPSIM_SOURCE_DIR) / "src" / "stepsim";
  const std::regex call(R"(\bshipped\(\))");
  int entry_points = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), root).generic_string();
    const std::string text = test::read_file(e.path().string());
    if (!std::regex_search(text, call)) continue;
    const bool allowed = rel.rfind("api/", 0) == 0 || rel.rfind("cli/", 0) == 0 || rel.rfind("catalog/catalog.", 0) == 0;
    EXPECT_TRUE(allowed) << "src/stepsim/" << rel << " calls catalog::shipped(): take a catalog::Catalog (or its table) "
                         << "as an argument instead";
    entry_points += allowed;
  }
  EXPECT_GT(entry_points, 5);  // the tree was read
}

}  // namespace
}  // namespace stepsim
