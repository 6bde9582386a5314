#include "stepsim/ingest/profile/nccl_topology.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <queue>

namespace stepsim::profile {
namespace {

bool parse_double(std::string_view s, double& out) {
  const char* b = s.data();
  const char* e = b + s.size();
  auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e && out >= 0 && out < 1e9;
}

// "GPU/0-1000 (0)" or "NET/1 (7a85/1/25.0)" or "CPU/0": type, id and the local rank of a GPU.
bool parse_node(std::string_view s, TopoNode& n) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash > 8) return false;
  n.type = std::string(s.substr(0, slash));
  for (char c : n.type)
    if (c < 'A' || c > 'Z') return false;
  s.remove_prefix(slash + 1);
  const size_t sp = s.find(' ');
  n.id = std::string(s.substr(0, sp));
  if (n.id.empty() || n.id.size() > 64) return false;
  n.local_rank = -1;
  if (n.type == "GPU" && sp != std::string_view::npos) {
    std::string_view rest = s.substr(sp + 1);
    if (rest.size() >= 3 && rest.front() == '(') {
      int r = -1;
      auto res = std::from_chars(rest.data() + 1, rest.data() + rest.size(), r);
      if (res.ec == std::errc() && res.ptr < rest.data() + rest.size() && *res.ptr == ')' && r >= 0 && r < 1 << 20)
        n.local_rank = r;
    }
  }
  return true;
}

}  // namespace

int TopologyBlock::find(std::string_view type, std::string_view id) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].type == type && nodes[i].id == id) return static_cast<int>(i);
  return -1;
}

std::optional<int> TopologyBlock::local_rank_of(std::string_view bus_id) const {
  for (const auto& n : nodes)
    if (n.type == "GPU" && n.id == bus_id && n.local_rank >= 0) return n.local_rank;
  return std::nullopt;
}

std::optional<TopologyBlock::Bottleneck> TopologyBlock::gpu_pair_bottleneck(std::string_view bus_a,
                                                                             std::string_view bus_b) const {
  const int a = find("GPU", bus_a), b = find("GPU", bus_b);
  if (a < 0 || b < 0) return std::nullopt;
  if (a == b) return Bottleneck{"LOC", 0};
  // Widest path (max over paths of the min link): NCCL routes over the fastest path, the slowest link on it
  // bounds the pair. Links are undirected here; a node graph has tens of nodes, so a simple relaxation is enough.
  std::vector<double> best(nodes.size(), -1);
  std::vector<std::string> via(nodes.size());
  best[a] = 1e18;
  for (size_t round = 0; round < nodes.size(); ++round) {
    bool changed = false;
    for (const auto& l : links) {
      for (int dir = 0; dir < 2; ++dir) {
        const int u = dir ? l.to : l.from, v = dir ? l.from : l.to;
        if (best[u] < 0) continue;
        // Only GPUs at the ends: traffic does not route through a third GPU in this model.
        if (nodes[u].type == "GPU" && u != a) continue;
        const double w = std::min(best[u], l.bw_GBps);
        if (w > best[v] + 1e-12) {
          best[v] = w;
          via[v] = (w == l.bw_GBps || via[u].empty()) ? l.type : via[u];
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  if (best[b] < 0) return std::nullopt;
  return Bottleneck{via[b], best[b]};
}

std::optional<TopologyBlock::Bottleneck> TopologyBlock::net_bottleneck() const {
  std::optional<Bottleneck> out;
  for (const auto& l : links)
    if (l.type == "NET" && (!out || l.bw_GBps > out->bw_GBps)) out = Bottleneck{"NET", l.bw_GBps};
  return out;
}

bool TopologyParser::feed(std::string_view msg, int line, const std::string& host) {
  if (msg.starts_with("=== System : ")) {
    TopologyBlock b;
    b.host = host;
    b.line = line;
    const size_t mx = msg.find("maxBw "), tot = msg.find("totalBw ");
    if (mx != std::string_view::npos && tot != std::string_view::npos && tot > mx) {
      std::string_view m = msg.substr(mx + 6, tot - mx - 6);
      while (!m.empty() && m.back() == ' ') m.remove_suffix(1);
      std::string_view t = msg.substr(tot + 8);
      t = t.substr(0, t.find(' '));
      if (!parse_double(m, b.max_bw_GBps) || !parse_double(t, b.total_bw_GBps)) ++garbled;
    } else {
      ++garbled;
    }
    blocks.push_back(std::move(b));
    open_ = true;
    stack_.clear();
    return true;
  }
  if (!open_) return false;
  if (msg.starts_with("=====")) {
    open_ = false;
    return true;
  }
  TopologyBlock& b = blocks.back();
  if (b.nodes.size() > 4096) {  // a runaway block: stop growing it
    open_ = false;
    ++garbled;
    return true;
  }
  const size_t plus = msg.find_first_not_of(' ');
  if (plus == std::string_view::npos) return true;
  if (msg[plus] != '+') {
    // A root node: "CPU/0 (1/2/-1)" (also "NVS/0", "NIC/..." at top level in some versions).
    TopoNode n;
    if (!parse_node(msg, n)) {
      ++garbled;
      return true;
    }
    int idx = b.find(n.type, n.id);
    if (idx < 0) {
      b.nodes.push_back(n);
      idx = static_cast<int>(b.nodes.size()) - 1;
    }
    stack_.assign(1, {static_cast<size_t>(-1), idx});  // a root encloses every '+' line
    return true;
  }
  // "+ PCI[24.0] - GPU/81000 (0)"
  std::string_view s = msg.substr(plus + 1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  const size_t lb = s.find('['), rb = s.find(']'), dash = s.find(" - ");
  double bw = 0;
  TopoNode n;
  if (lb == std::string_view::npos || rb == std::string_view::npos || lb == 0 || rb < lb ||
      dash == std::string_view::npos || dash < rb || !parse_double(s.substr(lb + 1, rb - lb - 1), bw) ||
      !parse_node(s.substr(dash + 3), n) || stack_.empty()) {
    ++garbled;
    return true;
  }
  while (stack_.size() > 1 && stack_.back().first >= plus) stack_.pop_back();
  int idx = b.find(n.type, n.id);
  if (idx < 0) {
    b.nodes.push_back(n);
    idx = static_cast<int>(b.nodes.size()) - 1;
  } else if (n.local_rank >= 0) {
    b.nodes[idx].local_rank = n.local_rank;
  }
  b.links.push_back({stack_.back().second, idx, std::string(s.substr(0, lb)), bw});
  stack_.push_back({plus, idx});
  return true;
}

}  // namespace stepsim::profile
