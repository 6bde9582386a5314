// The layers of src/stepsim (docs/ARCHITECTURE.md, "Layers"): a folder includes only folders of lower layers, the
// shared workload types never include a framework's builder, and no file-level include circle exists. Read from the
// source tree itself, so an include that runs up a layer fails here with the file and line that added it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace stepsim {
namespace {

namespace fs = std::filesystem;

// Lower numbers are lower layers. Folders of one layer are independent of each other.
const std::map<std::string, int>& layer_of_folder() {
  static const std::map<std::string, int> layers = {
      {"spec", 0},                                       // the job: schema, loading, validation
      {"hw", 1},                                         // GPUs, topology, calibration store
      {"workload", 2}, {"profile", 2},                   // what ranks run; NCCL log / nsys readers
      {"cost", 3},     {"trace", 3},  {"catalog", 3},    // op times; real traces to programs; the shipped constants
      {"overlap", 4},  {"chakra", 4}, {"extrapolate", 4},
      {"sim", 5},                                        // the engine and the wiring of the models
      {"report", 6},                                     // writers
      {"plan", 7},     {"validate", 7}, {"compare", 7},  // what is built on one step
      {"api", 8},                                        // the commands as library calls
      {"cli", 9},
  };
  return layers;
}

// Includes that run against the layers today, each with the issue that removes it. A new one fails the test.
const std::set<std::pair<std::string, std::string>>& known_exceptions() {
  static const std::set<std::pair<std::string, std::string>> known = {
      // The job loader and validate() resolve GPU names in the catalog, which lives with the topology in hw/: one
      // catalog below spec/ (issue 42 item 3) removes this.
      {"spec/job_loader.cpp", "hw/gpu_catalog.hpp"},
      {"spec/validate.cpp", "hw/gpu_catalog.hpp"},
      // The catalog value (issue 42 item 3) holds tables whose types still live in cost/ and is read by spec/ and by
      // the NCCL model: the folder layout of item 4 puts those types in catalog/, below both, and removes these.
      {"spec/job_loader.cpp", "catalog/catalog.hpp"},
      {"spec/validate.cpp", "catalog/catalog.hpp"},
      {"catalog/catalog.hpp", "cost/efficiency_table.hpp"},
      {"catalog/catalog.hpp", "cost/nccl_params.hpp"},
      {"catalog/catalog.hpp", "cost/nccl_tuner_table.hpp"},
      {"cost/nccl_model.hpp", "catalog/catalog.hpp"},
  };
  return known;
}

struct Include {
  std::string from, to;  // paths under src/stepsim
  int line = 0;
};

std::vector<Include> includes_of_tree(const fs::path& root) {
  std::vector<Include> out;
  const std::regex include_re(R"re(^\s*#\s*include\s*"stepsim/([^"]+)")re");
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
    const std::string from = fs::relative(e.path(), root).generic_string();
    std::ifstream in(e.path());
    std::string line;
    int n = 0;
    std::smatch m;
    while (std::getline(in, line)) {
      ++n;
      if (std::regex_search(line, m, include_re)) out.push_back({from, m[1].str(), n});
    }
  }
  return out;
}

// The tree's includes, read once for every test here.
const std::vector<Include>& tree_includes() {
  static const std::vector<Include> all = includes_of_tree(fs::path(STEPSIM_SOURCE_DIR) / "src" / "stepsim");
  return all;
}

std::string folder_of(const std::string& path) { return path.substr(0, path.find('/')); }

TEST(Layers, EveryFolderHasALayer) {
  const fs::path root = fs::path(STEPSIM_SOURCE_DIR) / "src" / "stepsim";
  for (const auto& e : fs::directory_iterator(root)) {
    if (!e.is_directory()) continue;
    EXPECT_TRUE(layer_of_folder().count(e.path().filename().string()))
        << "src/stepsim/" << e.path().filename().string() << " has no layer in tests/test_layers.cpp";
  }
}

TEST(Layers, NoIncludeRunsUpALayer) {
  const auto& includes = tree_includes();
  ASSERT_GT(includes.size(), 500u);  // the tree was read
  size_t known_seen = 0;
  for (const Include& i : includes) {
    const std::string a = folder_of(i.from), b = folder_of(i.to);
    if (a == b) continue;
    if (known_exceptions().count({i.from, i.to})) {
      ++known_seen;
      continue;
    }
    const auto la = layer_of_folder().find(a), lb = layer_of_folder().find(b);
    if (la == layer_of_folder().end() || lb == layer_of_folder().end()) continue;  // EveryFolderHasALayer says so
    EXPECT_LT(lb->second, la->second) << "src/stepsim/" << i.from << ":" << i.line << " includes stepsim/" << i.to
                                      << ": " << a << "/ (layer " << la->second << ") may include only lower layers";
  }
  // An exception that no longer occurs is removed from the list.
  EXPECT_EQ(known_seen, known_exceptions().size());
}

// The types every framework's builder shares (workload/*) never include a builder (workload/<framework>/*).
TEST(Layers, SharedWorkloadTypesDoNotIncludeAFrameworkBuilder) {
  for (const Include& i : tree_includes()) {
    const bool shared = i.from.rfind("workload/", 0) == 0 && i.from.find('/', 9) == std::string::npos;
    const bool builder = i.to.rfind("workload/", 0) == 0 && i.to.find('/', 9) != std::string::npos;
    EXPECT_FALSE(shared && builder) << "src/stepsim/" << i.from << ":" << i.line << " includes stepsim/" << i.to;
  }
}

// Headers form no circle: a header that includes another is never included back through a chain. (Folders form none
// either, by the layers above, except the known exceptions.)
TEST(Layers, NoHeaderIncludeCircle) {
  std::map<std::string, std::set<std::string>> edges;
  for (const Include& i : tree_includes()) {
    if (i.from.size() > 4 && i.from.compare(i.from.size() - 4, 4, ".hpp") == 0) edges[i.from].insert(i.to);
  }
  ASSERT_GT(edges.size(), 100u);
  std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
  std::vector<std::string> path;
  std::string circle;
  std::function<void(const std::string&)> visit = [&](const std::string& m) {
    state[m] = 1;
    path.push_back(m);
    for (const std::string& n : edges[m]) {
      if (!circle.empty()) break;
      if (state[n] == 1) {
        for (auto it = std::find(path.begin(), path.end(), n); it != path.end(); ++it) circle += *it + " -> ";
        circle += n;
      } else if (state[n] == 0) {
        visit(n);
      }
    }
    path.pop_back();
    state[m] = 2;
  };
  for (const auto& [m, _] : edges) {
    if (state[m] == 0 && circle.empty()) visit(m);
  }
  EXPECT_EQ(circle, "") << "include circle: " << circle;
}

}  // namespace
}  // namespace stepsim
