// The shipped constants as one value (src/stepsim/catalog/catalog.hpp): a second catalog reaches the models without
// touching the process's shipped one, and nothing below the command layer reads the shipped one by itself.
#include <filesystem>
#include <functional>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/io/data_file.hpp"
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

// The data files' one strict reader (io/data_file.hpp): what a job file gets (one document, no key twice, limits), and
// one wording of every mapping and scalar rule, with the line.
TEST(DataFile, OneSetOfChecksForEveryTable) {
  auto error_of_file = [](const std::string& name, const std::string& text,
                          const std::function<void(spec::DataFile&)>& read) {
    const std::string path = test::write_temp(name, text);
    return test::error_of([&] {
      spec::DataFile f(path, "test table");
      read(f);
    });
  };
  auto top_keys = [](spec::DataFile& f) { f.keys(f.root(), "(top level)", {"alpha", "beta"}, {"gamma"}); };
  std::string e = error_of_file("dup.yaml", "alpha: 1\nbeta: 2\nalpha: 3\n", top_keys);
  EXPECT_NE(e.find(":3: key 'alpha' appears twice"), std::string::npos) << e;
  e = error_of_file("two_docs.yaml", "alpha: 1\nbeta: 2\n---\nalpha: 3\n", top_keys);
  EXPECT_NE(e.find("second YAML document"), std::string::npos) << e;
  e = error_of_file("typo.yaml", "alpha: 1\nbeta: 2\ngama: 3\n", top_keys);
  EXPECT_NE(e.find("(top level).gama: unknown key (line 3); did you mean gamma?; allowed: alpha, beta, gamma"),
            std::string::npos) << e;
  e = error_of_file("missing.yaml", "alpha: 1\n", top_keys);
  EXPECT_NE(e.find("(top level).beta: missing required key (line 1)"), std::string::npos) << e;
  auto alpha_number = [](spec::DataFile& f) { (void)f.number(f.root()["alpha"], "alpha"); };
  e = error_of_file("text.yaml", "alpha: lots\n", alpha_number);
  EXPECT_NE(e.find("text.yaml: alpha: must be a number (line 1)"), std::string::npos) << e;
  auto alpha_integer = [](spec::DataFile& f) { (void)f.integer(f.root()["alpha"], "alpha"); };
  e = error_of_file("half.yaml", "\nalpha: 1.5\n", alpha_integer);
  EXPECT_NE(e.find("alpha: must be an integer (line 2)"), std::string::npos) << e;
  e = error_of_file("deep.yaml", "alpha: " + std::string(100, '[') + std::string(100, ']') + "\n", alpha_number);
  EXPECT_NE(e.find("nesting deeper than 64"), std::string::npos) << e;
  const std::string ok = test::write_temp("ok.yaml", "alpha: 2.5\nbeta: true\n");
  const spec::DataFile f(ok, "test table");
  EXPECT_DOUBLE_EQ(f.number(f.root()["alpha"], "alpha"), 2.5);
  EXPECT_TRUE(f.boolean(f.root()["beta"], "beta"));
  // Booleans as a job file takes them (one parse, io/yaml_reader.hpp's parse_bool): on/no are read, maybe is refused.
  const std::string words = test::write_temp("words.yaml", "alpha: on\nbeta: no\ngamma: maybe\n");
  const spec::DataFile w(words, "test table");
  EXPECT_TRUE(w.boolean(w.root()["alpha"], "alpha"));
  EXPECT_FALSE(w.boolean(w.root()["beta"], "beta"));
  e = test::error_of([&] { (void)w.boolean(w.root()["gamma"], "gamma"); });
  EXPECT_NE(e.find("words.yaml: gamma: must be true or false (line 3)"), std::string::npos) << e;
  e = test::error_of([] { const spec::DataFile missing("/nonexistent/stepsim/x.yaml", "test table"); });
  EXPECT_NE(e.find("/nonexistent/stepsim/x.yaml"), std::string::npos) << e;
}

// Only the commands as library calls (api/) ask for the process's shipped catalog; every layer below takes one, and
// the CLI and the Python binding reach it through api/.
TEST(Catalog, OnlyTheEntryPointsReadTheShippedCatalog) {
  const fs::path root = fs::path(STEPSIM_SOURCE_DIR) / "src" / "stepsim";
  const std::regex call(R"(\bshipped\(\))");
  int entry_points = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), root).generic_string();
    const std::string text = test::read_file(e.path().string());
    if (!std::regex_search(text, call)) continue;
    const bool allowed = rel.rfind("api/", 0) == 0 || rel.rfind("catalog/catalog.", 0) == 0;
    EXPECT_TRUE(allowed) << "src/stepsim/" << rel << " calls catalog::shipped(): take a catalog::Catalog (or its table) "
                         << "as an argument instead";
    entry_points += allowed;
  }
  EXPECT_GT(entry_points, 5);  // the tree was read
}

}  // namespace
}  // namespace stepsim
