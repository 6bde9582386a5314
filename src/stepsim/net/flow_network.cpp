// FlowNetwork (flow_network.hpp). Participants of the max-min sharing ("entities") are uncoupled flows or
// coupled phases; each knows the links it crosses with a weight (bytes on that link per byte of its lead
// flow). Rates are progressive filling over the connected component of entities that share links with a
// changed one; drains are internal events, reported completions come after the phase's latency.
// Photonic fabrics add circuits: dynamic links between two nodes, set up on demand (TrioSim §7.1).
#include "stepsim/net/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxTime = kNever / 4;  // any finish beyond this (~73 years) is clamped

// Nanoseconds (not seconds) rounded up as ceil_ns() documents.
int64_t ns_up(double ns) {
  if (!(ns > 0)) return 0;
  if (ns >= static_cast<double>(kMaxTime)) return kMaxTime;
  return std::max<int64_t>(0, static_cast<int64_t>(std::ceil(ns - 1e-6 - ns * 1e-12)));
}

struct Incidence {
  int32_t link;
  int32_t pos;  // index of this entity in users[link]
  double weight;
};

struct User {
  int32_t entity;
  int32_t inc;  // index into the entity's incidences
};

enum class State : uint8_t { Free, Waiting, Setting, Active };

struct Entity {
  State state = State::Free;
  bool frozen = false;
  uint32_t version = 0;  // bumps invalidate queued events
  uint32_t stamp = 0;    // component search
  int32_t group = -1;
  double total = 0;      // bytes of the lead flow
  double remaining = 0;
  double rate = 0;       // lead-flow bytes/s
  double new_rate = 0;   // solve scratch
  bool fresh = false;    // attached since the last solve: needs its first drain event
  int64_t last_ns = 0;   // when `remaining` was last brought up to date
  std::vector<Incidence> inc;
  // Photonic only: static path links for the statistics, circuits needed, and the path with circuit
  // crossings as references (-1 - 2 * need index - direction) until the circuits exist.
  std::vector<std::pair<int32_t, double>> stat;
  std::vector<uint64_t> needs;
  std::vector<std::pair<int32_t, double>> raw;
};

struct Group {
  int32_t transfer = -1;
  int32_t pending = 0;     // entities not drained yet
  int64_t latency_ns = 0;  // largest path latency + extra latency
  int64_t last_drain_ns = 0;
};

struct Transfer {
  uint64_t tag = 0;
  int32_t pending = 0;  // groups not finished yet
  int64_t end_ns = 0;
};

enum class EventKind : uint8_t { Drain, Ready };

struct Event {
  int64_t t;
  uint64_t seq;
  int32_t entity;
  uint32_t version;
  EventKind kind;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Completion {
  int64_t t;
  uint64_t tag;
  bool operator>(const Completion& o) const { return t != o.t ? t > o.t : tag > o.tag; }
};

struct Level {
  double level;
  int32_t link;
  bool operator>(const Level& o) const { return level != o.level ? level > o.level : link > o.link; }
};

struct Circuit {
  int32_t a = -1, b = -1;  // nodes, a < b
  int32_t refs = 0;        // entities holding it
  int64_t ready_ns = 0;
  int64_t idle_since = 0;
};

uint64_t pair_key(int a, int b) {
  if (a > b) std::swap(a, b);
  return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b);
}

template <class T>
using MinHeap = std::priority_queue<T, std::vector<T>, std::greater<T>>;

}  // namespace

int64_t ceil_ns(double seconds) { return ns_up(seconds * 1e9); }

struct FlowNetwork::Impl {
  explicit Impl(const hw::Topology& t) : topo(t), router(t) {
    L = t.link_count();
    photonic = t.photonic().enabled;
    int slots = L;
    if (photonic) {
      max_circuits = std::max(1, t.num_nodes() * t.photonic().ports_per_node / 2 + 1);
      slots += 2 * max_circuits;
      node_circuits.resize(t.num_nodes());
    }
    capacity.resize(slots);
    for (int l = 0; l < L; ++l) capacity[l] = t.link(l).bandwidth;
    users.resize(slots);
    bytes.assign(L, 0.0);
    link_stamp.assign(slots, 0);
    cap_left.assign(slots, 0.0);
    wsum.assign(slots, 0.0);
    unfrozen.assign(slots, 0);
  }

  const hw::Topology& topo;
  hw::Router router;
  int L = 0;
  std::vector<double> capacity;
  std::vector<std::vector<User>> users;
  std::vector<double> bytes;

  std::vector<Entity> ents;
  std::vector<int32_t> free_ents;
  std::vector<Group> groups;
  std::vector<int32_t> free_groups;
  std::vector<Transfer> transfers;
  std::vector<int32_t> free_transfers;
  int64_t live_entities = 0;

  MinHeap<Event> events;
  uint64_t seq = 0;
  MinHeap<Completion> completions;
  int64_t now = 0;

  // Rate solve scratch (per link slot).
  std::vector<uint32_t> link_stamp;
  uint32_t stamp = 0;
  std::vector<double> cap_left, wsum;
  std::vector<int32_t> unfrozen;
  std::vector<int32_t> comp, comp_links, stack, seeds_e, seeds_l;
  std::vector<Level> heap_;
  std::vector<int32_t> path;

  uint64_t solves = 0, rerated = 0;

  // Photonic.
  bool photonic = false;
  int max_circuits = 0;
  std::vector<Circuit> circuits;
  std::vector<int32_t> free_circuits;
  std::unordered_map<uint64_t, int32_t> circuit_of;  // lookups only
  std::vector<std::vector<int32_t>> node_circuits;
  std::vector<int32_t> waiting;  // entities waiting for circuit ports, in arrival order
  uint64_t established = 0, evicted = 0;

  // ------------------------------------------------------------------ bookkeeping
  template <class T>
  static int32_t alloc(std::vector<T>& pool, std::vector<int32_t>& free_list) {
    if (!free_list.empty()) {
      const int32_t i = free_list.back();
      free_list.pop_back();
      return i;
    }
    pool.emplace_back();
    return static_cast<int32_t>(pool.size()) - 1;
  }

  int vertex_of(int rank, int other) const {
    if (rank == kNodeSwitch) {
      if (other < 0 || other >= topo.num_ranks()) throw std::invalid_argument("FlowNetwork: NVLS flow needs a GPU end");
      const int sw = topo.nvswitch_of_node(topo.node_of_rank(other));
      if (sw < 0) throw std::invalid_argument("FlowNetwork: NVLS flow on a node without NVSwitch");
      return sw;
    }
    if (rank < 0 || rank >= topo.num_ranks())
      throw std::out_of_range("FlowNetwork: rank " + std::to_string(rank) + " outside the topology's " +
                              std::to_string(topo.num_ranks()) + " ranks");
    return topo.gpu_vertex(rank);
  }

  void push_event(int64_t t, int32_t e, EventKind kind) {
    events.push({t, seq++, e, ents[e].version, kind});
  }

  void clean_top() {
    while (!events.empty()) {
      const Event& ev = events.top();
      const Entity& e = ents[ev.entity];
      const bool live = e.version == ev.version &&
                        ((ev.kind == EventKind::Drain && e.state == State::Active) ||
                         (ev.kind == EventKind::Ready && e.state == State::Setting));
      if (live) break;
      events.pop();
    }
  }

  void finish_transfer_if_done(int32_t tr) {
    Transfer& x = transfers[tr];
    if (x.pending > 0) return;
    completions.push({x.end_ns, x.tag});
    free_transfers.push_back(tr);
  }

  void group_done(int32_t g) {
    Group& grp = groups[g];
    Transfer& x = transfers[grp.transfer];
    x.end_ns = std::max(x.end_ns, std::min(kMaxTime, grp.last_drain_ns + grp.latency_ns));
    --x.pending;
    free_groups.push_back(g);
    finish_transfer_if_done(grp.transfer);
  }

  // ------------------------------------------------------------------ links of an entity
  void attach(int32_t e) {
    Entity& x = ents[e];
    for (size_t i = 0; i < x.inc.size(); ++i) {
      Incidence& in = x.inc[i];
      in.pos = static_cast<int32_t>(users[in.link].size());
      users[in.link].push_back({e, static_cast<int32_t>(i)});
    }
    x.state = State::Active;
    x.last_ns = now;
    x.rate = 0;
    x.fresh = true;
  }

  void detach(int32_t e) {
    Entity& x = ents[e];
    for (const Incidence& in : x.inc) {
      std::vector<User>& u = users[in.link];
      const User last = u.back();
      u[in.pos] = last;
      ents[last.entity].inc[last.inc].pos = in.pos;
      u.pop_back();
    }
  }

  // Sorted by link, equal links merged (a coupled phase crossing a link twice weighs 2).
  static void merge(std::vector<std::pair<int32_t, double>>& v) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t o = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      if (o > 0 && v[o - 1].first == v[i].first) v[o - 1].second += v[i].second;
      else v[o++] = v[i];
    }
    v.resize(o);
  }

  static void set_incidences(Entity& x, std::vector<std::pair<int32_t, double>>& links) {
    merge(links);
    x.inc.clear();
    x.inc.reserve(links.size());
    for (const auto& [l, w] : links) x.inc.push_back({l, 0, w});
  }

  // ------------------------------------------------------------------ starting
  int32_t new_entity(int32_t g, double lead_bytes) {
    const int32_t e = alloc(ents, free_ents);
    Entity& x = ents[e];
    x.state = State::Waiting;
    x.group = g;
    x.total = x.remaining = lead_bytes;
    x.rate = 0;
    x.last_ns = now;
    x.inc.clear();
    x.stat.clear();
    x.needs.clear();
    x.raw.clear();
    ++groups[g].pending;
    ++live_entities;
    return e;
  }

  // Appends the path's links with weight w to `out`; photonic circuit crossings become references into
  // `needs` (and the static links go to `stat`).
  void add_path(const std::vector<int32_t>& p, double w, std::vector<std::pair<int32_t, double>>& out,
                std::vector<uint64_t>* needs, std::vector<std::pair<int32_t, double>>* stat) {
    for (size_t i = 0; i < p.size(); ++i) {
      const hw::Link& k = topo.link(p[i]);
      if (photonic && topo.vertex(k.to).kind == hw::VertexKind::CircuitSwitch && i + 1 < p.size()) {
        const int a = topo.vertex(k.from).node, b = topo.vertex(topo.link(p[i + 1]).to).node;
        const uint64_t key = pair_key(a, b);
        auto it = std::find(needs->begin(), needs->end(), key);
        const int idx = static_cast<int>(it - needs->begin());
        if (it == needs->end()) needs->push_back(key);
        out.push_back({-1 - 2 * idx - (a > b ? 1 : 0), w});
        stat->push_back({p[i], w});
        stat->push_back({p[i + 1], w});
        ++i;
        continue;
      }
      out.push_back({p[i], w});
      if (stat) stat->push_back({p[i], w});
    }
  }

  // Routes one flow; returns its path latency in seconds (0 when both ends are the same vertex).
  double route(const FlowSpec& f, uint64_t salt) {
    path.clear();
    const int s = vertex_of(f.src_rank, f.dst_rank), d = vertex_of(f.dst_rank, f.src_rank);
    if (s == d) return 0;
    router.route(s, d, salt, path);
    double lat = 0;
    for (int32_t l : path) lat += topo.link(l).latency;
    return lat;
  }

  void check_flow(const FlowSpec& f) {
    if (!(f.bytes >= 0) || !std::isfinite(f.bytes))
      throw std::invalid_argument("FlowNetwork: flow bytes must be finite and >= 0");
    if (f.src_rank == kNodeSwitch && f.dst_rank == kNodeSwitch)
      throw std::invalid_argument("FlowNetwork: a flow needs at least one GPU end");
  }

  // Makes an entity from its links; it starts now, after its circuits, or when ports free up.
  void launch(int32_t e, std::vector<std::pair<int32_t, double>>& links) {
    Entity& x = ents[e];
    if (!photonic || x.needs.empty()) {
      set_incidences(x, links);
      x.stat.clear();
      attach(e);
      seeds_e.push_back(e);
      return;
    }
    x.raw = std::move(links);
    check_ports(x);
    if (!try_grant(e)) waiting.push_back(e);
  }

  void add_phase(const FlowPhase& ph, int32_t tr) {
    if (ph.extra_latency_ns < 0) throw std::invalid_argument("FlowNetwork: extra latency must be >= 0");
    const int32_t g = alloc(groups, free_groups);
    groups[g] = Group{tr, 0, 0, now};
    double max_lat = 0;
    std::vector<std::pair<int32_t, double>> links;
    if (ph.coupled) {
      double lead = 0;
      for (const FlowSpec& f : ph.flows) {
        check_flow(f);
        if (f.src_rank != f.dst_rank) lead = std::max(lead, f.bytes);
      }
      int32_t e = -1;
      std::vector<uint64_t> needs;
      std::vector<std::pair<int32_t, double>> stat;
      for (size_t i = 0; i < ph.flows.size(); ++i) {
        const FlowSpec& f = ph.flows[i];
        max_lat = std::max(max_lat, route(f, i));
        if (f.bytes > 0 && !path.empty()) add_path(path, f.bytes / lead, links, &needs, photonic ? &stat : nullptr);
      }
      if (!links.empty()) {
        e = new_entity(g, lead);
        ents[e].needs = std::move(needs);
        ents[e].stat = std::move(stat);
        launch(e, links);
      }
    } else {
      for (size_t i = 0; i < ph.flows.size(); ++i) {
        const FlowSpec& f = ph.flows[i];
        check_flow(f);
        max_lat = std::max(max_lat, route(f, i));
        if (!(f.bytes > 0) || path.empty()) continue;
        links.clear();
        std::vector<uint64_t> needs;
        std::vector<std::pair<int32_t, double>> stat;
        add_path(path, 1.0, links, &needs, photonic ? &stat : nullptr);
        const int32_t e = new_entity(g, f.bytes);
        ents[e].needs = std::move(needs);
        ents[e].stat = std::move(stat);
        launch(e, links);
      }
    }
    Group& grp = groups[g];
    grp.latency_ns = std::min(kMaxTime, ns_up(max_lat * 1e9) + ph.extra_latency_ns);
    ++transfers[tr].pending;
    if (grp.pending == 0) group_done(g);
  }

  void start(int64_t t, const std::vector<FlowPhase>& phases, uint64_t tag) {
    if (t < now) throw std::invalid_argument("FlowNetwork::start at " + std::to_string(t) + " ns before now " +
                                             std::to_string(now) + " ns");
    run_internal(t);
    now = t;
    const int32_t tr = alloc(transfers, free_transfers);
    transfers[tr] = Transfer{tag, 1, t};  // the extra pending count keeps it open while phases are added
    for (const FlowPhase& ph : phases) add_phase(ph, tr);
    --transfers[tr].pending;
    finish_transfer_if_done(tr);
    solve();
    clean_top();
  }

  // ------------------------------------------------------------------ events
  void drain(int32_t e) {
    Entity& x = ents[e];
    detach(e);
    for (const Incidence& in : x.inc) seeds_l.push_back(in.link);
    if (x.stat.empty()) {
      for (const Incidence& in : x.inc) bytes[in.link] += in.weight * x.total;
    } else {
      for (const auto& [l, w] : x.stat) bytes[l] += w * x.total;
    }
    x.state = State::Free;
    ++x.version;
    --live_entities;
    if (photonic && !x.needs.empty()) release_circuits(x);
    const int32_t g = x.group;
    free_ents.push_back(e);
    Group& grp = groups[g];
    grp.last_drain_ns = now;
    if (--grp.pending == 0) group_done(g);
  }

  // Runs drains and circuit-ready events up to and including t, re-solving after each instant.
  void run_internal(int64_t t) {
    clean_top();
    while (!events.empty() && events.top().t <= t) {
      const int64_t at = events.top().t;
      now = std::max(now, at);
      while (!events.empty() && events.top().t == at) {
        const Event ev = events.top();
        events.pop();
        Entity& x = ents[ev.entity];
        if (x.version != ev.version) continue;
        if (ev.kind == EventKind::Drain && x.state == State::Active) {
          drain(ev.entity);
        } else if (ev.kind == EventKind::Ready && x.state == State::Setting) {
          attach(ev.entity);
          seeds_e.push_back(ev.entity);
        }
      }
      solve();
      clean_top();
    }
  }

  void advance(int64_t t, std::vector<uint64_t>& done) {
    for (;;) {
      clean_top();
      const int64_t ti = events.empty() ? kNever : events.top().t;
      const int64_t tc = completions.empty() ? kNever : completions.top().t;
      const int64_t at = std::min(ti, tc);
      if (at > t) break;
      run_internal(at);  // internal events first: a drain at `at` may complete a zero-latency phase at `at`
      while (!completions.empty() && completions.top().t <= at) {
        done.push_back(completions.top().tag);
        completions.pop();
      }
    }
    now = std::max(now, t);
  }

  // ------------------------------------------------------------------ max-min rates
  // Component of the changed entities/links, progressive filling on it, new drain events.
  void solve() {
    if (seeds_e.empty() && seeds_l.empty()) return;
    ++stamp;
    if (stamp == 0) {  // wrapped: clear old stamps
      std::fill(link_stamp.begin(), link_stamp.end(), 0);
      for (Entity& x : ents) x.stamp = 0;
      stamp = 1;
    }
    comp.clear();
    comp_links.clear();
    stack.clear();
    auto visit_entity = [&](int32_t e) {
      Entity& x = ents[e];
      if (x.state != State::Active || x.stamp == stamp) return;
      x.stamp = stamp;
      comp.push_back(e);
      stack.push_back(e);
    };
    auto visit_link = [&](int32_t l) {
      if (link_stamp[l] == stamp) return;
      link_stamp[l] = stamp;
      comp_links.push_back(l);
      for (const User& u : users[l]) visit_entity(u.entity);
    };
    for (int32_t l : seeds_l) visit_link(l);
    for (int32_t e : seeds_e) visit_entity(e);
    seeds_l.clear();
    seeds_e.clear();
    while (!stack.empty()) {
      const int32_t e = stack.back();
      stack.pop_back();
      for (const Incidence& in : ents[e].inc) visit_link(in.link);
    }
    if (comp.empty()) return;
    ++solves;
    rerated += comp.size();

    for (int32_t e : comp) {  // bytes moved at the old rates
      Entity& x = ents[e];
      x.remaining = std::max(0.0, x.remaining - x.rate * static_cast<double>(now - x.last_ns) * 1e-9);
      x.last_ns = now;
      x.frozen = false;
    }
    for (int32_t l : comp_links) {
      cap_left[l] = capacity[l];
      wsum[l] = 0;
      unfrozen[l] = 0;
    }
    size_t left = comp.size();
    for (int32_t e : comp) {
      Entity& x = ents[e];
      if (x.inc.empty()) {  // nothing to cross: done at once
        x.new_rate = std::numeric_limits<double>::infinity();
        x.frozen = true;
        --left;
        continue;
      }
      for (const Incidence& in : x.inc) {
        wsum[in.link] += in.weight;
        ++unfrozen[in.link];
      }
    }
    // Progressive filling with a lazy heap: a link's level (remaining capacity / unfrozen weight) only rises
    // as entities elsewhere freeze at lower levels, so a queued key is a lower bound; a popped link whose
    // level has risen is queued again instead of being updated on every freeze.
    heap_.clear();
    for (int32_t l : comp_links)
      if (unfrozen[l] > 0) heap_.push_back({cap_left[l] / wsum[l], l});
    std::make_heap(heap_.begin(), heap_.end(), std::greater<Level>());
    double floor_level = 0;
    while (left > 0 && !heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<Level>());
      const Level top = heap_.back();
      heap_.pop_back();
      const int32_t l = top.link;
      if (unfrozen[l] == 0) continue;
      const double now_level = std::max(0.0, cap_left[l]) / std::max(wsum[l], 1e-300);
      if (now_level > top.level * (1 + 1e-12) + 1e-300) {
        heap_.push_back({now_level, l});
        std::push_heap(heap_.begin(), heap_.end(), std::greater<Level>());
        continue;
      }
      // Every unfrozen entity on the tightest link stops at its level (levels only rise; the max() guards
      // against rounding making a later level a hair lower).
      const double level = std::max(now_level, floor_level);
      floor_level = level;
      for (const User& u : users[l]) {
        Entity& x = ents[u.entity];
        if (x.frozen) continue;
        x.frozen = true;
        x.new_rate = level;
        --left;
        for (const Incidence& in : x.inc) {
          cap_left[in.link] -= in.weight * level;
          wsum[in.link] -= in.weight;
          --unfrozen[in.link];
        }
      }
    }
    for (int32_t e : comp) {
      Entity& x = ents[e];
      // An unchanged rate keeps its queued drain (its time was computed from the same rate).
      if (x.new_rate == x.rate && !x.fresh) continue;
      x.rate = x.new_rate;
      x.fresh = false;
      ++x.version;
      const int64_t dt = std::isinf(x.rate) || x.remaining <= 0 ? 0 : ns_up(x.remaining / x.rate * 1e9);
      push_event(std::min(kMaxTime, now + dt), e, EventKind::Drain);
    }
  }

  // ------------------------------------------------------------------ photonic circuits
  int free_ports(int node) const {
    return topo.photonic().ports_per_node - static_cast<int>(node_circuits[node].size());
  }

  // A transfer that needs more circuits at one node than the node has ports can never start.
  void check_ports(const Entity& x) const {
    std::vector<int> nodes;
    for (uint64_t k : x.needs) {
      nodes.push_back(static_cast<int>(k >> 32));
      nodes.push_back(static_cast<int>(k & 0xffffffffu));
    }
    std::sort(nodes.begin(), nodes.end());
    for (size_t i = 0; i < nodes.size();) {
      size_t j = i;
      while (j < nodes.size() && nodes[j] == nodes[i]) ++j;
      if (static_cast<int>(j - i) > topo.photonic().ports_per_node)
        throw InputError("key cluster.network.photonic.ports_per_node: one transfer needs " + std::to_string(j - i) +
                         " circuits at node " + std::to_string(nodes[i]) + " but a node has " +
                         std::to_string(topo.photonic().ports_per_node) + " ports");
      i = j;
    }
  }

  bool idle_circuit(int32_t c) const { return circuits[c].refs == 0; }

  // Grants all circuits of entity e at once or none: reuses established ones, takes free ports, and evicts
  // the longest-idle circuits of a node that has no free port left.
  bool try_grant(int32_t e) {
    Entity& x = ents[e];
    std::vector<std::pair<int, int>> demand;  // (node, new circuits there)
    auto add_demand = [&](int n) {
      for (auto& d : demand)
        if (d.first == n) return void(++d.second);
      demand.push_back({n, 1});
    };
    for (uint64_t k : x.needs)
      if (!circuit_of.count(k)) {
        add_demand(static_cast<int>(k >> 32));
        add_demand(static_cast<int>(k & 0xffffffffu));
      }
    for (const auto& [n, want] : demand) {
      int avail = free_ports(n);
      for (int32_t c : node_circuits[n])
        if (idle_circuit(c) && std::find(x.needs.begin(), x.needs.end(), pair_key(circuits[c].a, circuits[c].b)) == x.needs.end())
          ++avail;
      if (avail < want) return false;
    }
    for (uint64_t k : x.needs) {
      auto it = circuit_of.find(k);
      if (it != circuit_of.end()) ++circuits[it->second].refs;
    }
    for (const auto& [n, want] : demand)
      while (free_ports(n) < want) evict_longest_idle(n);
    int64_t ready = now;
    std::vector<int32_t> ids;
    for (uint64_t k : x.needs) {
      auto it = circuit_of.find(k);
      const int32_t c = it != circuit_of.end() ? it->second : open_circuit(k);
      ids.push_back(c);
      ready = std::max(ready, circuits[c].ready_ns);
    }
    for (auto& [l, w] : x.raw) {
      if (l >= 0) continue;
      const int ref = -1 - l;
      const int32_t c = ids[ref / 2];
      l = L + 2 * c + (ref % 2);  // slot 0: a -> b, slot 1: b -> a
    }
    set_incidences(x, x.raw);
    x.raw.clear();
    if (ready <= now) {
      attach(e);
      seeds_e.push_back(e);
    } else {
      x.state = State::Setting;
      push_event(ready, e, EventKind::Ready);
    }
    return true;
  }

  int32_t open_circuit(uint64_t key) {
    const int32_t c = alloc(circuits, free_circuits);
    if (c >= max_circuits) throw std::logic_error("FlowNetwork: circuit slots exhausted");
    Circuit& k = circuits[c];
    k.a = static_cast<int32_t>(key >> 32);
    k.b = static_cast<int32_t>(key & 0xffffffffu);
    k.refs = 1;
    k.ready_ns = std::min(kMaxTime, now + ns_up(topo.photonic().setup_s * 1e9));
    k.idle_since = k.ready_ns;
    capacity[L + 2 * c] = capacity[L + 2 * c + 1] = topo.photonic().port_bandwidth;
    node_circuits[k.a].push_back(c);
    node_circuits[k.b].push_back(c);
    circuit_of[key] = c;
    ++established;
    return c;
  }

  void evict_longest_idle(int n) {
    int32_t best = -1;
    for (int32_t c : node_circuits[n]) {
      if (!idle_circuit(c)) continue;
      if (best < 0 || circuits[c].idle_since < circuits[best].idle_since ||
          (circuits[c].idle_since == circuits[best].idle_since &&
           pair_key(circuits[c].a, circuits[c].b) < pair_key(circuits[best].a, circuits[best].b)))
        best = c;
    }
    if (best < 0) throw std::logic_error("FlowNetwork: no idle circuit to evict");
    Circuit& k = circuits[best];
    for (int node : {k.a, k.b}) {
      auto& v = node_circuits[node];
      v.erase(std::find(v.begin(), v.end(), best));
    }
    circuit_of.erase(pair_key(k.a, k.b));
    free_circuits.push_back(best);
    ++evicted;
  }

  void release_circuits(const Entity& x) {
    bool freed = false;
    for (uint64_t k : x.needs) {
      Circuit& c = circuits[circuit_of.at(k)];
      if (--c.refs == 0) {
        c.idle_since = now;
        freed = true;
      }
    }
    if (!freed || waiting.empty()) return;
    // Ports may be free now: grant waiting transfers in arrival order (later ones may pass a blocked one).
    std::vector<int32_t> still;
    for (int32_t e : waiting)
      if (!try_grant(e)) still.push_back(e);
    waiting.swap(still);
  }

  void reset() {
    ents.clear();
    free_ents.clear();
    groups.clear();
    free_groups.clear();
    transfers.clear();
    free_transfers.clear();
    live_entities = 0;
    events = {};
    completions = {};
    now = 0;
    seq = 0;
    for (auto& u : users) u.clear();
    std::fill(bytes.begin(), bytes.end(), 0.0);
    std::fill(link_stamp.begin(), link_stamp.end(), 0);
    stamp = 0;
    solves = rerated = 0;
    circuits.clear();
    free_circuits.clear();
    circuit_of.clear();
    for (auto& v : node_circuits) v.clear();
    waiting.clear();
    established = evicted = 0;
  }
};

FlowNetwork::FlowNetwork(const hw::Topology& topology) : impl_(std::make_unique<Impl>(topology)) {}
FlowNetwork::~FlowNetwork() = default;

void FlowNetwork::start(int64_t t_ns, std::vector<FlowSpec> flows, bool coupled, uint64_t tag, int64_t extra_latency_ns) {
  std::vector<FlowPhase> phases(1);
  phases[0].flows = std::move(flows);
  phases[0].coupled = coupled;
  phases[0].extra_latency_ns = extra_latency_ns;
  impl_->start(t_ns, phases, tag);
}

void FlowNetwork::start(int64_t t_ns, std::vector<FlowPhase> phases, uint64_t tag) { impl_->start(t_ns, phases, tag); }

int64_t FlowNetwork::next_completion_ns() const {
  const int64_t ti = impl_->events.empty() ? kNever : impl_->events.top().t;
  const int64_t tc = impl_->completions.empty() ? kNever : impl_->completions.top().t;
  return std::min(ti, tc);
}

void FlowNetwork::advance(int64_t t_ns, std::vector<uint64_t>& done) { impl_->advance(t_ns, done); }
int64_t FlowNetwork::now_ns() const { return impl_->now; }
bool FlowNetwork::idle() const { return impl_->live_entities == 0 && impl_->completions.empty(); }
void FlowNetwork::reset() { impl_->reset(); }

double FlowNetwork::link_bytes(int link) const { return impl_->bytes[link]; }

std::vector<LinkLoad> FlowNetwork::busiest_links(size_t k) const {
  std::vector<LinkLoad> all;
  for (int l = 0; l < impl_->L; ++l)
    if (impl_->bytes[l] > 0) all.push_back({l, impl_->bytes[l]});
  const auto order = [](const LinkLoad& a, const LinkLoad& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.link < b.link; };
  k = std::min(k, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(), order);
  all.resize(k);
  return all;
}

uint64_t FlowNetwork::rate_recomputations() const { return impl_->solves; }
uint64_t FlowNetwork::rerated_transfers() const { return impl_->rerated; }
uint64_t FlowNetwork::circuits_established() const { return impl_->established; }
uint64_t FlowNetwork::circuits_evicted() const { return impl_->evicted; }
const hw::Topology& FlowNetwork::topology() const { return impl_->topo; }
hw::Router& FlowNetwork::router() { return impl_->router; }

}  // namespace stepsim::cost
