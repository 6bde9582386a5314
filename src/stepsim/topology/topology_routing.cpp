// Router: shortest-hop routes with deterministic ECMP (hw/topology.hpp explains the search and cache).
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "stepsim/topology/topology.hpp"

namespace stepsim::hw {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finaliser: spreads nearby keys over all bits
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Router::Router(const Topology& topology, size_t cache_bytes)
    : topo_(topology), destination_mod_(topology.routing() == spec::Routing::DestMod) {
  const size_t per_search = static_cast<size_t>(topology.vertex_count()) * 2 * sizeof(int32_t) + 64;
  max_searches_ = std::max<size_t>(1, cache_bytes / per_search);
  max_path_links_ = std::max<size_t>(1024, cache_bytes / 16);  // ~4 bytes a link + the map entry per route
}

bool Router::is(int v, VertexKind k) const { return topo_.vertex(v).kind == k; }

// A NIC is a GPU's door to the network, never a bridge between two GPUs of its node (their traffic takes the
// node's own fabric, whatever the NIC count): a GPU may not step into a NIC whose route leaves through a GPU.
bool Router::bridges_gpus(const Search& s, int from, int nic) const {
  return s.to_gpu[nic] && is(from, VertexKind::Gpu);
}

Router::Search& Router::search_to(int dst, int src) {
  ++clock_;
  auto it = cache_.find(dst);
  if (it == cache_.end()) {
    if (cache_.size() >= max_searches_) {
      // Evict the least recently used search (last_use values are unique, so the choice is deterministic).
      auto oldest = cache_.begin();
      for (auto i = cache_.begin(); i != cache_.end(); ++i)
        if (i->second.last_use < oldest->second.last_use) oldest = i;
      cache_.erase(oldest);
    }
    Search s;
    s.dist.assign(topo_.vertex_count(), -1);
    s.to_gpu.assign(topo_.vertex_count(), 0);
    s.dist[dst] = 0;
    s.queue.push_back(dst);
    it = cache_.emplace(dst, std::move(s)).first;
    ++searches_;
  }
  Search& s = it->second;
  s.last_use = clock_;
  // Expand level by level until the source is labelled: every vertex nearer than the source is then
  // labelled, which is all the walk from the source needs.
  while (s.dist[src] < 0 && s.head < s.queue.size()) {
    const int32_t x = s.queue[s.head++];
    for (int32_t l : topo_.in_links(x)) {
      const int32_t y = topo_.link(l).from;
      if (s.dist[y] >= 0 || bridges_gpus(s, y, x)) continue;
      s.dist[y] = s.dist[x] + 1;
      s.to_gpu[y] = is(y, VertexKind::Nic) && is(x, VertexKind::Gpu);
      s.queue.push_back(y);
    }
  }
  if (s.dist[src] < 0)
    throw std::runtime_error("network: no path from " + topo_.vertex_name(src) + " to " + topo_.vertex_name(dst));
  return s;
}

void Router::route(int src, int dst, uint64_t salt, std::vector<int32_t>& links) {
  if (src == dst) return;
  // Vertex ids fit 20 bits (kMaxTopologyVertices); salts up to 2^24 are cached.
  const bool cacheable = salt < (uint64_t{1} << 24);
  const uint64_t pkey = (static_cast<uint64_t>(src) << 44) | (static_cast<uint64_t>(dst) << 24) | salt;
  if (cacheable) {
    auto it = paths_.find(pkey);
    if (it != paths_.end()) {
      links.insert(links.end(), path_links_.begin() + it->second.first, path_links_.begin() + it->second.second);
      return;
    }
  }
  const size_t first = links.size();
  walk(src, dst, salt, links);
  if (!cacheable) return;
  if (path_links_.size() + (links.size() - first) > max_path_links_) {
    paths_.clear();
    path_links_.clear();
  }
  const auto begin = static_cast<uint32_t>(path_links_.size());
  path_links_.insert(path_links_.end(), links.begin() + static_cast<std::ptrdiff_t>(first), links.end());
  paths_.emplace(pkey, std::make_pair(begin, static_cast<uint32_t>(path_links_.size())));
}

void Router::walk(int src, int dst, uint64_t salt, std::vector<int32_t>& links) {
  const Search& s = search_to(dst, src);
  const uint64_t key = mix(mix(mix(static_cast<uint64_t>(src)) ^ static_cast<uint64_t>(dst)) ^ salt);
  int v = src;
  while (v != dst) {
    const int32_t want = s.dist[v] - 1;
    auto usable = [&](int32_t l) {
      const int32_t to = topo_.link(l).to;
      return s.dist[to] == want && !bridges_gpus(s, v, to);
    };
    int count = 0;
    for (int32_t l : topo_.out_links(v)) count += usable(l);
    int pick = 0;
    if (count > 1) {
      const uint64_t h = destination_mod_ ? static_cast<uint64_t>(dst) : mix(key ^ static_cast<uint64_t>(v));
      pick = static_cast<int>(h % static_cast<uint64_t>(count));
    }
    for (int32_t l : topo_.out_links(v)) {
      if (!usable(l)) continue;
      if (pick-- == 0) {
        links.push_back(l);
        v = topo_.link(l).to;
        break;
      }
    }
  }
}

int Router::hops(int src, int dst) {
  if (src == dst) return 0;
  return search_to(dst, src).dist[src];
}

double Router::path_latency(int src, int dst, uint64_t salt) {
  std::vector<int32_t> links;
  route(src, dst, salt, links);
  double t = 0;
  for (int32_t l : links) t += topo_.link(l).latency;
  return t;
}

}  // namespace stepsim::hw
