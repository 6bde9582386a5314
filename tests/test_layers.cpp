// The layers of src/stepsim (docs/ARCHITECTURE.md, "Layers"): a folder includes only folders of lower layers, the
// shared workload types never include a framework's builder, the CLI and the Python binding include only api/, no file-level include circle exists and no circle between
// folders, and the libraries of CMakeLists.txt (one per layer) hold exactly the folders of their layer and link none
// above it. Read from the source tree itself, so an include that runs up a layer fails here with the file and line that
// added it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace stepsim {
namespace {

namespace fs = std::filesystem;

// Lower numbers are lower layers. Folders of one layer are independent of each other. A folder is the first component
// of a path under src/stepsim, or the first two under cost/ and ingest/ (folder_of).
const std::map<std::string, int>& layer_of_folder() {
  static const std::map<std::string, int> layers = {
      {"io", 0},                                                       // the error contract, strict readers
      {"job", 1},                                                      // the job description types
      {"catalog", 2},      {"topology", 2},        {"workload", 2},    // data files; the network graph; what ranks run
      {"cost/compute", 3}, {"input", 3},           {"net", 3},         // op times; job readers; the flow network
      {"ingest/trace", 3},                                             // real traces to programs
      {"cost/collective", 4}, {"ingest/chakra", 4}, {"ingest/profile", 4},
      {"calibrate", 5},    {"cost/overlap", 5},                        // measurements and fits; overlap slowdowns
      {"sim", 6},          {"ingest/extrapolate", 6},                  // the engine
      {"assemble", 7},                                                 // the wiring of the models
      {"report", 8},                                                   // writers
      {"plan", 9},         {"validate", 9},        {"compare", 9},     // what is built on one step
      {"api", 10},                                                     // the commands as library calls
      {"cli", 11},
  };
  return layers;
}

// Includes that run against the layers, each with the issue that removes it. A new one fails the test. (Empty since
// issue 42 item 5 put the GPU catalog below the job readers.)
const std::set<std::pair<std::string, std::string>>& known_exceptions() {
  static const std::set<std::pair<std::string, std::string>> known = {};
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

// The layer key of a path under src/stepsim: its first component, or its first two under cost/ and ingest/.
std::string folder_of(const std::string& path) {
  const size_t first = path.find('/');
  const std::string top = path.substr(0, first);
  if ((top == "cost" || top == "ingest") && first != std::string::npos) {
    return path.substr(0, path.find('/', first + 1));
  }
  return top;
}

// The first circle of a directed graph, as "a -> b -> a" (each node followed by `suffix`); "" when there is none.
std::string first_circle(std::map<std::string, std::set<std::string>>& edges, const std::string& suffix) {
  std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
  std::vector<std::string> path;
  std::string circle;
  std::function<void(const std::string&)> visit = [&](const std::string& m) {
    state[m] = 1;
    path.push_back(m);
    for (const std::string& n : edges[m]) {
      if (!circle.empty()) break;
      if (state[n] == 1) {
        for (auto it = std::find(path.begin(), path.end(), n); it != path.end(); ++it) circle += *it + suffix + " -> ";
        circle += n + suffix;
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
  return circle;
}

TEST(Layers, EveryFolderHasALayer) {
  const fs::path root = fs::path(STEPSIM_SOURCE_DIR) / "src" / "stepsim";
  std::set<std::string> folders;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string rel = fs::relative(e.path(), root).generic_string();
    if (e.is_regular_file() && rel.find('/') == std::string::npos) {
      ADD_FAILURE() << "src/stepsim/" << rel << " is in no folder";
      continue;
    }
    if (!e.is_regular_file()) continue;
    const std::string folder = folder_of(rel);
    folders.insert(folder);
    EXPECT_TRUE(layer_of_folder().count(folder))
        << "src/stepsim/" << rel << ": its folder " << folder << "/ has no layer in tests/test_layers.cpp";
  }
  // And the table names no folder that is gone.
  for (const auto& [folder, layer] : layer_of_folder()) {
    EXPECT_TRUE(folders.count(folder)) << folder << "/ (layer " << layer << ") is not a folder of src/stepsim";
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

// The command line and the Python binding are thin: they parse options, call api/ and print what it returns. Their
// direct includes are api/ (every command as a library call), io/ (the error contract), report/ (progress bars and
// number formats) and their own folder, so any logic they would need has to live in api/ or below, where both reach it.
TEST(Layers, TheEntryPointsIncludeOnlyTheApi) {
  const std::set<std::string> allowed = {"api", "cli", "io", "report"};
  for (const Include& i : tree_includes()) {
    if (folder_of(i.from) != "cli") continue;
    EXPECT_TRUE(allowed.count(folder_of(i.to))) << "src/stepsim/" << i.from << ":" << i.line << " includes stepsim/"
                                                << i.to << ": the CLI reaches the library through api/ only";
  }
  const fs::path binding = fs::path(STEPSIM_SOURCE_DIR) / "python" / "binding";
  const std::vector<Include> python = includes_of_tree(binding);
  ASSERT_FALSE(python.empty());  // the binding was read
  for (const Include& i : python) {
    EXPECT_TRUE(allowed.count(folder_of(i.to)) && folder_of(i.to) != "cli")
        << "python/binding/" << i.from << ":" << i.line << " includes stepsim/" << i.to
        << ": the Python API reaches the library through api/ only";
  }
}

// The types every framework's builder shares (workload/*) never include a builder (workload/<framework>/*).
TEST(Layers, SharedWorkloadTypesDoNotIncludeAFrameworkBuilder) {
  for (const Include& i : tree_includes()) {
    const bool shared = i.from.rfind("workload/", 0) == 0 && i.from.find('/', 9) == std::string::npos;
    const bool builder = i.to.rfind("workload/", 0) == 0 && i.to.find('/', 9) != std::string::npos;
    EXPECT_FALSE(shared && builder) << "src/stepsim/" << i.from << ":" << i.line << " includes stepsim/" << i.to;
  }
}

// Headers form no circle: a header that includes another is never included back through a chain.
TEST(Layers, NoHeaderIncludeCircle) {
  std::map<std::string, std::set<std::string>> edges;
  for (const Include& i : tree_includes()) {
    if (i.from.size() > 4 && i.from.compare(i.from.size() - 4, 4, ".hpp") == 0) edges[i.from].insert(i.to);
  }
  ASSERT_GT(edges.size(), 100u);
  const std::string circle = first_circle(edges, "");
  EXPECT_EQ(circle, "") << "include circle: " << circle;
}


// Folders form no circle either, whatever the layer table says: folder A including folder B and B, through any chain,
// including A.
TEST(Layers, NoFolderCircle) {
  std::map<std::string, std::set<std::string>> edges;
  for (const Include& i : tree_includes()) {
    const std::string a = folder_of(i.from), b = folder_of(i.to);
    if (a != b) edges[a].insert(b);
  }
  const std::string circle = first_circle(edges, "/");
  EXPECT_EQ(circle, "") << "folder circle: " << circle;
}

// CMakeLists.txt builds one library per layer: `stepsim_layer(stepsim_layer<N> FOLDERS ... LINKS ...)` holds exactly
// the folders of layer N (every folder in one library) and links only libraries of lower layers.
TEST(Layers, OneLibraryPerLayer) {
  std::ifstream in(fs::path(STEPSIM_SOURCE_DIR) / "CMakeLists.txt");
  ASSERT_TRUE(in) << "CMakeLists.txt";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string cmake = ss.str();
  const std::regex call_re(R"re(\nstepsim_layer\((stepsim_layer(\d+))\s+FOLDERS([^)]*)\))re");
  const std::regex word_re(R"re([A-Za-z0-9_/${}]+)re");
  std::map<std::string, std::string> library_of;  // folder -> library
  std::set<int> layers_seen;
  for (auto it = std::sregex_iterator(cmake.begin(), cmake.end(), call_re); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1].str();
    const int layer = std::stoi((*it)[2].str());
    layers_seen.insert(layer);
    const std::string args = (*it)[3].str();
    enum { kFolders, kLinks, kExtra } part = kFolders;
    for (auto w = std::sregex_iterator(args.begin(), args.end(), word_re); w != std::sregex_iterator(); ++w) {
      const std::string word = w->str();
      if (word == "LINKS") part = kLinks;
      else if (word == "EXTRA") part = kExtra;
      else if (part == kFolders) {
        const auto l = layer_of_folder().find(word);
        if (l == layer_of_folder().end()) {
          ADD_FAILURE() << name << " holds " << word << "/, which has no layer";
          continue;
        }
        EXPECT_EQ(l->second, layer) << name << " holds " << word << "/ of layer " << l->second;
        EXPECT_TRUE(library_of.emplace(word, name).second) << word << "/ is in two libraries";
      } else if (part == kLinks) {
        const std::string prefix = "stepsim_layer";
        ASSERT_EQ(word.rfind(prefix, 0), 0u) << name << " links " << word << ", not a layer's library";
        EXPECT_LT(std::stoi(word.substr(prefix.size())), layer) << name << " links " << word;
      } else {
        break;  // EXTRA: a folder, then generated sources
      }
    }
  }
  for (const auto& [folder, layer] : layer_of_folder()) {
    if (folder == "cli") continue;  // the executable, not a library
    EXPECT_TRUE(library_of.count(folder)) << folder << "/ (layer " << layer << ") is in no library of CMakeLists.txt";
  }
  EXPECT_GE(layers_seen.size(), 10u);
}

}  // namespace
}  // namespace stepsim
