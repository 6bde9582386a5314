// Loader of data/nccl-tuner.yaml: strict, every table complete, so the tuner never reads a default it was not given.
#include "stepsim/catalog/nccl_tuner_table.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/data_file.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {
namespace {

const std::vector<std::string> kAlgorithmKeys = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
const std::vector<std::string> kProtocolKeys = {"ll", "ll128", "simple"};
const std::vector<std::string> kArchKeys = {"volta", "ampere", "hopper", "blackwell"};
const std::vector<std::string> kLinkKeys = {"nvlink", "pci", "net"};

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The table's shapes (rows per algorithm, protocol or architecture) over the data files' one strict reader.
class TableParser {
 public:
  explicit TableParser(const spec::DataFile& f) : f_(f) {}

  [[noreturn]] void fail(const std::string& key, const std::string& rule) const { f_.fail(key, rule); }

  // A mapping holding exactly `keys` (none missing, none other).
  void exact_keys(const YAML::Node& n, const std::string& key, const std::vector<std::string>& keys,
                  const std::vector<std::string>& optional = {}) const {
    f_.keys(n, key, keys, optional);
  }

  double number(const YAML::Node& n, const std::string& key, double hi = 1e6) const {
    const double v = f_.number(n, key);
    if (v < 0 || v > hi) f_.fail_at(n, key, "must be in [0, " + number_text(hi) + "], got " + number_text(v));
    return v;
  }

  template <size_t N>
  std::array<double, N> row(const YAML::Node& n, const std::string& key, double hi = 1e6) const {
    if (!n.IsSequence() || n.size() != N) fail(key, "must be a list of " + std::to_string(N) + " numbers");
    std::array<double, N> out{};
    for (size_t i = 0; i < N; ++i) out[i] = number(n[i], key + "[" + std::to_string(i) + "]", hi);
    return out;
  }

  // {name: [values...]} over `names`, in their order.
  template <size_t Rows, size_t N>
  std::array<std::array<double, N>, Rows> rows(const YAML::Node& n, const std::string& key,
                                               const std::vector<std::string>& names, double hi = 1e6) const {
    exact_keys(n, key, names);
    std::array<std::array<double, N>, Rows> out{};
    for (size_t i = 0; i < Rows; ++i) out[i] = row<N>(n[names[i]], key + "." + names[i], hi);
    return out;
  }

  template <size_t N>
  std::array<double, N> scalars(const YAML::Node& n, const std::string& key, const std::vector<std::string>& names,
                                double hi = 1e6) const {
    exact_keys(n, key, names);
    std::array<double, N> out{};
    for (size_t i = 0; i < N; ++i) out[i] = number(n[names[i]], key + "." + names[i], hi);
    return out;
  }

 private:
  const spec::DataFile& f_;
};

std::string version_text(const std::array<int, 3>& v) {
  return std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
}

// `versions`: a list of {until, source, base_latency_us?, hw_latency_us?}, newest first, each older than the table.
std::vector<NcclTunerTable::Release> read_releases(const TableParser& p, const spec::DataFile& file,
                                                   const YAML::Node& list, const std::array<int, 3>& table_version) {
  if (!list.IsSequence()) p.fail("versions", "must be a list of {until, source, base_latency_us, hw_latency_us}");
  std::vector<NcclTunerTable::Release> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string key = "versions[" + std::to_string(i) + "]";
    const YAML::Node e = list[i];
    const std::set<std::string> has =
        file.keys(e, key, {"until", "source"}, {"from", "base_latency_us", "hw_latency_us", "absent"});
    NcclTunerTable::Release r;
    const std::string until = file.text(e["until"], key + ".until");
    const auto v = parse_nccl_version(until);
    if (!v) p.fail(key + ".until", "must be an NCCL release such as 2.27.7, got " + until);
    if (*v >= table_version) {
      p.fail(key + ".until", "must be older than the table's version " + version_text(table_version));
    }
    if (!out.empty() && *v >= out.back().until) {
      p.fail(key + ".until", "must be older than the entry before it (newest first)");
    }
    r.until = *v;
    r.from = {(*v)[0], (*v)[1], 0};
    if (has.count("from")) {
      const std::string text = file.text(e["from"], key + ".from");
      const auto f = parse_nccl_version(text);
      if (!f || *f > *v) p.fail(key + ".from", "must be an NCCL release no later than until, got " + text);
      r.from = *f;
    }
    r.source = file.text(e["source"], key + ".source");
    const auto read_algorithms = [&](const YAML::Node& n, const std::string& at, int table) {
      if (!n.IsMap() || n.size() == 0) {
        p.fail(at, "must map an algorithm (" + kAlgorithmKeys[0] + ", ...) to [LL, LL128, Simple]");
      }
      file.keys(n, at, {}, kAlgorithmKeys);
      for (size_t a = 0; a < kAlgorithmKeys.size(); ++a) {
        if (n[kAlgorithmKeys[a]]) {
          const std::string row_key = at + "." + kAlgorithmKeys[a];
          r.changes.push_back(
              {table, static_cast<int>(a), p.row<NcclTunerTable::kProtocols>(n[kAlgorithmKeys[a]], row_key, 1e4)});
        }
      }
    };
    if (has.count("base_latency_us")) read_algorithms(e["base_latency_us"], key + ".base_latency_us", 0);
    if (has.count("hw_latency_us")) {
      const YAML::Node hw = e["hw_latency_us"];
      const std::set<std::string> links = file.keys(hw, key + ".hw_latency_us", {}, kLinkKeys);
      for (size_t l = 0; l < kLinkKeys.size(); ++l) {
        if (links.count(kLinkKeys[l])) {
          read_algorithms(hw[kLinkKeys[l]], key + ".hw_latency_us." + kLinkKeys[l], 1 + static_cast<int>(l));
        }
      }
    }
    if (has.count("absent")) {
      const YAML::Node a = e["absent"];
      if (!a.IsSequence()) p.fail(key + ".absent", "must be a list of algorithms (" + kAlgorithmKeys.back() + ", ...)");
      for (size_t j = 0; j < a.size(); ++j) {
        const std::string name = file.text(a[j], key + ".absent[" + std::to_string(j) + "]");
        if (std::find(kAlgorithmKeys.begin(), kAlgorithmKeys.end(), name) == kAlgorithmKeys.end())
          p.fail(key + ".absent[" + std::to_string(j) + "]", "must name an algorithm of the table, got " + name);
        r.absent.push_back(name);
      }
    }
    if (r.changes.empty() && r.absent.empty()) {
      p.fail(key, "changes nothing (give base_latency_us, hw_latency_us or absent)");
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::optional<std::array<int, 3>> parse_nccl_version(const std::string& text) {
  std::array<int, 3> v{};
  size_t i = text.size() > 0 && (text[0] == 'v' || text[0] == 'V') ? 1 : 0;
  for (int part = 0; part < 3; ++part) {
    if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (part >= 2) break;
      return std::nullopt;
    }
    int n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && n < 100000) {
      n = n * 10 + (text[i++] - '0');
    }
    v[part] = n;
    if (part < 2) {
      if (i < text.size() && text[i] == '.') ++i;
      else if (part == 0) return std::nullopt;
      else break;
    }
  }
  return v;
}

NcclTunerTable NcclTunerTable::load(const std::string& path) {
  const spec::DataFile file(path, "NCCL tuner table");
  const YAML::Node& root = file.root();
  const TableParser p(file);
  NcclTunerTable t;
  try {
    p.exact_keys(root, "(top level)",
                 {"source", "version", "base_latency_us", "hw_latency_us", "ll_max_bw_GBps", "per_channel_max_GBps",
                  "nvls_efficiency", "tree_correction", "max_threads", "thread_threshold_bytes", "refinements", "p2p"},
                 {"versions"});
    t.source = file.text(root["source"], "source");
    t.version = file.text(root["version"], "version");
    if (!parse_nccl_version(t.version)) p.fail("version", "must be an NCCL release such as 2.30.7, got " + t.version);
    if (root["versions"]) t.releases = read_releases(p, file, root["versions"], *parse_nccl_version(t.version));
    t.base_latency_us = p.rows<kAlgorithms, kProtocols>(root["base_latency_us"], "base_latency_us", kAlgorithmKeys, 1e4);
    const YAML::Node hw = root["hw_latency_us"];
    p.exact_keys(hw, "hw_latency_us", kLinkKeys);
    for (size_t l = 0; l < kLinkKeys.size(); ++l)
      t.hw_latency_us[l] =
          p.rows<kAlgorithms, kProtocols>(hw[kLinkKeys[l]], "hw_latency_us." + kLinkKeys[l], kAlgorithmKeys, 1e4);
    t.ll_max_bw_GBps = p.rows<kArchs, kNodeColumns>(root["ll_max_bw_GBps"], "ll_max_bw_GBps", kArchKeys);
    const YAML::Node pc = root["per_channel_max_GBps"];
    p.exact_keys(pc, "per_channel_max_GBps", {"ring_ll128", "tree_ll128", "tree", "nvls_tree"});
    t.per_channel_ring_ll128 = p.rows<kArchs, kNodeColumns>(pc["ring_ll128"], "per_channel_max_GBps.ring_ll128", kArchKeys);
    t.per_channel_tree_ll128 = p.rows<kArchs, kNodeColumns>(pc["tree_ll128"], "per_channel_max_GBps.tree_ll128", kArchKeys);
    t.per_channel_tree = p.rows<kArchs, kNodeColumns>(pc["tree"], "per_channel_max_GBps.tree", kArchKeys);
    t.per_channel_nvls_tree = p.rows<kArchs, kNodeColumns>(pc["nvls_tree"], "per_channel_max_GBps.nvls_tree", kArchKeys);
    t.nvls_efficiency = p.scalars<kArchs>(root["nvls_efficiency"], "nvls_efficiency", kArchKeys, 1.0);
    t.tree_correction = p.rows<kProtocols, kTreeSizes>(root["tree_correction"], "tree_correction", kProtocolKeys, 1.0);
    t.max_threads = p.scalars<kProtocols>(root["max_threads"], "max_threads", kProtocolKeys, 4096);
    t.thread_threshold_bytes = p.scalars<kProtocols>(root["thread_threshold_bytes"], "thread_threshold_bytes", kProtocolKeys, 1e6);
    for (size_t i = 0; i < kProtocols; ++i)
      if (t.max_threads[i] < 32) p.fail("max_threads." + kProtocolKeys[i], "must be at least one warp (32)");
    const YAML::Node p2p = root["p2p"];
    p.exact_keys(p2p, "p2p", {"per_channel_net_GBps", "peers_per_batch"});
    t.p2p_per_channel_net_GBps = p.number(p2p["per_channel_net_GBps"], "p2p.per_channel_net_GBps", 1e4);
    t.p2p_peers_per_batch = p.number(p2p["peers_per_batch"], "p2p.peers_per_batch", 1024);
    if (t.p2p_per_channel_net_GBps <= 0) p.fail("p2p.per_channel_net_GBps", "must be > 0");
    if (t.p2p_peers_per_batch < 1) p.fail("p2p.peers_per_batch", "must be >= 1");
    const YAML::Node r = root["refinements"];
    p.exact_keys(r, "refinements",
                 {"ring_ll_bus_factor", "ring_ll128_bus_factor", "tree_simple_bus_factor", "tree_ll_bus_divisor",
                  "tree_ll128_bus_factor_one_node", "tree_ll128_bus_factor_multi_node", "pat_bus_factor",
                  "collnet_direct_sm90_factor", "net_overhead_us", "net_overhead_simple_factor",
                  "ring_plateau_latency_factor", "pat_inter_latency_divisor", "pat_per_rank_us",
                  "collnet_direct_per_rank_us"});
    auto f = [&](const char* k, double hi) { return p.number(r[k], std::string("refinements.") + k, hi); };
    t.ring_ll_bus_factor = f("ring_ll_bus_factor", 1);
    t.ring_ll128_bus_factor = f("ring_ll128_bus_factor", 1);
    t.tree_simple_bus_factor = f("tree_simple_bus_factor", 1);
    t.tree_ll_bus_divisor = f("tree_ll_bus_divisor", 100);
    if (t.tree_ll_bus_divisor < 1) p.fail("refinements.tree_ll_bus_divisor", "must be >= 1 (it divides the bandwidth)");
    t.tree_ll128_bus_factor_one_node = f("tree_ll128_bus_factor_one_node", 1);
    t.tree_ll128_bus_factor_multi_node = f("tree_ll128_bus_factor_multi_node", 1);
    t.pat_bus_factor = f("pat_bus_factor", 1);
    t.collnet_direct_sm90_factor = f("collnet_direct_sm90_factor", 1);
    const auto overhead = p.scalars<2>(r["net_overhead_us"], "refinements.net_overhead_us", {"intel", "amd"}, 1e3);
    t.net_overhead_us_intel = overhead[0];
    t.net_overhead_us_amd = overhead[1];
    t.net_overhead_simple_factor = f("net_overhead_simple_factor", 100);
    const auto plateau =
        p.scalars<2>(r["ring_plateau_latency_factor"], "refinements.ring_plateau_latency_factor", {"sm80_plus", "older"}, 100);
    t.ring_plateau_sm80_plus = plateau[0];
    t.ring_plateau_older = plateau[1];
    t.pat_inter_latency_divisor = f("pat_inter_latency_divisor", 100);
    if (t.pat_inter_latency_divisor <= 0) p.fail("refinements.pat_inter_latency_divisor", "must be > 0 (it divides a latency)");
    t.pat_per_rank_us = f("pat_per_rank_us", 1e3);
    t.collnet_direct_per_rank_us = f("collnet_direct_per_rank_us", 1e3);
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": " + e.what());  // what the checks above did not name (odd key types, ...)
  }
  return t;
}

NcclTunerTable NcclTunerTable::for_version(const std::string& v, const std::string& key, std::string* note) const {
  if (v.empty()) return *this;
  const auto want = parse_nccl_version(v);
  if (!want) throw InputError(key + ": '" + v + "' is not an NCCL version (such as 2.21.5)");
  NcclTunerTable t = *this;
  t.version = version_text(*want);
  for (const Release& r : releases) {
    if (*want > r.until) break;
    for (const LatencyChange& c : r.changes) {
      (c.table == 0 ? t.base_latency_us : t.hw_latency_us[c.table - 1])[c.algorithm] = c.value;
    }
    for (const std::string& a : r.absent) {
      if (std::find(t.absent_algorithms.begin(), t.absent_algorithms.end(), a) == t.absent_algorithms.end())
        t.absent_algorithms.push_back(a);
    }
  }
  if (note && !releases.empty() && *want < releases.back().from) {
    // Older releases are not tabulated: say which constants stand in.
    *note = key + " " + v + ": NCCL's tuning constants are tabulated back to " + version_text(releases.back().from) +
            " (data/nccl-tuner.yaml versions); " + version_text(releases.back().until) + "'s are used";
  }
  return t;
}


}  // namespace stepsim::cost
