#include "stepsim/ingest/profile/comm_infer.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace stepsim::profile {
namespace {

// The dimensions in the order of their Megatron stride; ties (EP/CP, or DP when cp = 1) keep this order.
const std::vector<std::string> kDims = {"TP", "CP", "EP", "DP", "PP"};

int size_of(const std::string& dim, const ParallelismSizes& p) {
  if (dim == "TP") return p.tp;
  if (dim == "CP") return p.cp;
  if (dim == "EP") return p.ep;
  if (dim == "DP") return p.dp;
  return p.pp;
}

// A candidate communicator: one exact group (same commId) or a set of entries with equal op sequences.
struct Unit {
  std::vector<size_t> entries;
  bool exact = false;
  int n = 0;
  bool p2p = false;
  std::vector<std::string> candidates;  // still possible dimensions, stride order
  std::string parallelism;              // empty while ambiguous
  double calls_per_entry = 0;
};

// Members' ranks sorted; the common difference of consecutive ranks, or 0 when it is not constant.
int common_stride(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  if (ranks.size() < 2) return 0;
  const int s = ranks[1] - ranks[0];
  for (size_t i = 2; i < ranks.size(); ++i)
    if (ranks[i] - ranks[i - 1] != s) return 0;
  return s;
}

// Keeps the candidates the members' rank evidence allows; all of them when the evidence rules out every one
// (a layout that is not Megatron's must not erase the size match).
std::vector<std::string> by_rank_evidence(const Unit& u, const std::vector<CommEntry>& e, const ParallelismSizes& p) {
  std::vector<int> ranks;
  bool locals = true;
  for (size_t i : u.entries) {
    ranks.push_back(e[i].rank);
    locals = locals && e[i].local_rank >= 0;
  }
  const std::set<int> distinct(ranks.begin(), ranks.end());
  std::vector<std::string> keep;
  for (const auto& d : u.candidates) {
    const int s = megatron_stride(d, p);
    bool ok = true;
    if (locals) {
      // Megatron numbers a group's members by their index along the dimension: (rank / stride) mod size.
      for (size_t i : u.entries) ok = ok && (e[i].rank / s) % u.n == e[i].local_rank;
    } else if ((u.exact || static_cast<int>(ranks.size()) == u.n) && distinct.size() == ranks.size() && ranks.size() >= 2) {
      ok = common_stride(ranks) == s;  // one group's members: their spacing is the stride
    } else {
      continue;  // a set of several groups: its spacing says nothing
    }
    if (ok) keep.push_back(d);
  }
  return keep.empty() ? u.candidates : keep;
}

void classify(Unit& u, const std::vector<CommEntry>& e, const ParallelismSizes& p) {
  if (u.p2p) {
    // All-to-all runs as grouped Send/Recv to every peer; a pipeline rank talks to at most its two neighbours.
    int lo = u.n, hi = 0;
    for (size_t i : u.entries) lo = std::min(lo, e[i].peers), hi = std::max(hi, e[i].peers);
    if (u.n >= 3 && (hi > 2 || lo == u.n - 1)) {
      u.parallelism = "EP";
      return;
    }
    for (const char* d : {"EP", "PP"})
      if (size_of(d, p) == u.n) u.candidates.push_back(d);
    if (u.candidates.size() == 2) u.candidates = by_rank_evidence(u, e, p);
    // §4.2.3: point-to-point traffic is pipeline traffic unless the evidence says expert.
    u.parallelism = u.candidates.size() == 1 ? u.candidates.front() : "PP";
    return;
  }
  for (const auto& d : kDims)
    if (size_of(d, p) == u.n) u.candidates.push_back(d);
  if (u.candidates.empty()) {
    // No dimension of this size (with sizes inferred, §4.2.3's largest-is-DP rule has already made dp one).
    u.parallelism = "collective";
    return;
  }
  if (u.candidates.size() > 1) u.candidates = by_rank_evidence(u, e, p);
  if (u.candidates.size() > 1) {
    // Same size and same stride (ep = dp with cp = 1): the collectives are the data-parallel ones.
    auto ep = std::find(u.candidates.begin(), u.candidates.end(), "EP");
    if (ep != u.candidates.end()) u.candidates.erase(ep);
  }
  if (u.candidates.size() == 1) u.parallelism = u.candidates.front();
}

// Members of a unit cut into groups of n in rank order: every group is n consecutive ranks starting at a multiple of
// n (Megatron's tensor-parallel groups; an exact group is one such cut).
bool consecutive_groups(const Unit& u, const std::vector<CommEntry>& e) {
  std::vector<int> ranks;
  for (size_t i : u.entries) ranks.push_back(e[i].rank);
  std::sort(ranks.begin(), ranks.end());
  if (u.n < 2 || ranks.size() % static_cast<size_t>(u.n) != 0) return false;
  for (size_t j = 0; j < ranks.size(); ++j) {
    const int first = ranks[j - j % static_cast<size_t>(u.n)];
    if (first % u.n != 0 || ranks[j] != first + static_cast<int>(j % static_cast<size_t>(u.n))) return false;
  }
  return true;
}

// Sizes when the user gave none (§4.2.3 falls back to "the largest communicator is DP"; this goes one step
// further with Megatron's rank order): pp = the size of the point-to-point communicators that talk to at most
// two peers, tp = the smallest collective communicator below the world whose groups are consecutive ranks, and
// dp = what is left of the world. Nothing fits (the product does not divide the world): dp = the largest
// collective communicator, the thesis' rule.
ParallelismSizes infer_sizes(const std::vector<Unit>& units, const std::vector<CommEntry>& e, int world) {
  ParallelismSizes s;
  int pp = 1, tp = 0, largest = 0;
  // A log of some ranks of a larger job (an excerpt) still says the job's size in its communicators' nranks.
  for (const auto& u : units) world = std::max(world, u.n);
  for (const auto& u : units) {
    if (u.p2p) {
      int hi = 0;
      for (size_t i : u.entries) hi = std::max(hi, e[i].peers);
      if (hi <= 2 && u.n > 1) pp = std::max(pp, u.n);
      continue;
    }
    largest = std::max(largest, u.n);
    if (u.n < world && consecutive_groups(u, e) && (tp == 0 || u.n < tp)) tp = u.n;
  }
  tp = std::max(tp, 1);
  if (world % (tp * pp) == 0) {
    s.tp = tp > 1 ? tp : 0;
    s.pp = pp > 1 ? pp : 0;
    const int dp = world / (tp * pp);
    s.dp = dp > 1 ? dp : 0;
  } else if (largest > 1) {
    s.dp = largest;
  }
  return s;
}

}  // namespace

int megatron_stride(const std::string& dim, const ParallelismSizes& p) {
  const int tp = std::max(p.tp, 1), cp = std::max(p.cp, 1), dp = std::max(p.dp, 1);
  if (dim == "TP") return 1;
  if (dim == "CP" || dim == "EP") return tp;
  if (dim == "DP") return tp * cp;
  return tp * cp * dp;  // PP
}

std::vector<InferredComm> infer_comms(std::vector<CommEntry> e, int world, ParallelismSizes& p) {
  std::vector<Unit> units;
  // Exact groups: one commId (NCCL's unique id hash) of the init lines, each rank once.
  std::map<std::pair<uint64_t, int>, std::vector<size_t>> by_id;
  std::vector<bool> placed(e.size(), false);
  for (size_t i = 0; i < e.size(); ++i)
    if (e[i].comm_id != 0) by_id[{e[i].comm_id, e[i].nranks}].push_back(i);
  for (auto& [key, idx] : by_id) {
    std::set<int> ranks;
    for (size_t i : idx) ranks.insert(e[i].rank);
    if (ranks.size() != idx.size() || (key.second > 0 && static_cast<int>(idx.size()) > key.second)) continue;
    Unit u;
    u.entries = idx;
    u.exact = true;
    units.push_back(u);
    for (size_t i : idx) placed[i] = true;
  }
  // The rest: equal op sequences of equal size are one logical group (§4.2.3) — except that one GPU holds one rank of
  // a communicator: entries on a GPU already in the group (a second run in the same log) start another instance, the
  // k-th entry of each GPU (in rank order) going to instance k.
  std::map<std::tuple<std::vector<std::tuple<int, int64_t, int>>, int, bool>, std::vector<size_t>> by_seq;
  for (size_t i = 0; i < e.size(); ++i)
    if (!placed[i]) by_seq[{e[i].seq, e[i].nranks, e[i].p2p}].push_back(i);
  auto gpu_of = [&](size_t i) { return std::make_pair(e[i].host, e[i].device); };
  const size_t exact_units = units.size();
  for (auto& [key, idx] : by_seq) {
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return e[a].rank < e[b].rank; });
    std::map<std::pair<std::string, int>, size_t> on_gpu;  // GPU → entries seen on it
    std::vector<std::vector<size_t>> instance;
    for (size_t i : idx) {
      const size_t k = e[i].device >= 0 ? on_gpu[gpu_of(i)]++ : 0;
      if (instance.size() <= k) instance.resize(k + 1);
      instance[k].push_back(i);
    }
    for (auto& members : instance) {
      // The entries of an exact group's run that logged no init line: same sequence and size, on GPUs the exact group
      // does not use, and room left in it.
      bool merged = false;
      for (size_t x = 0; x < exact_units && !merged; ++x) {
        Unit& u = units[x];
        const CommEntry& f = e[u.entries.front()];
        if (f.seq != e[members.front()].seq || f.nranks != e[members.front()].nranks || f.nranks <= 0 ||
            static_cast<int>(u.entries.size() + members.size()) > f.nranks)
          continue;
        std::set<std::pair<std::string, int>> gpus;
        std::set<int> ranks;
        for (size_t i : u.entries) gpus.insert(gpu_of(i)), ranks.insert(e[i].rank);
        bool clash = false;
        for (size_t i : members) clash = clash || (e[i].device >= 0 && gpus.count(gpu_of(i))) || ranks.count(e[i].rank);
        if (clash) continue;
        u.entries.insert(u.entries.end(), members.begin(), members.end());
        merged = true;
      }
      if (merged) continue;
      Unit u;
      u.entries = members;
      units.push_back(u);
    }
  }
  for (auto& u : units) {
    std::sort(u.entries.begin(), u.entries.end(), [&](size_t a, size_t b) {
      return std::tie(e[a].rank, e[a].ptr) < std::tie(e[b].rank, e[b].ptr);
    });
    const CommEntry& f = e[u.entries.front()];
    u.n = f.nranks > 0 ? f.nranks : static_cast<int>(u.entries.size());
    u.p2p = true;
    int64_t calls = 0;
    for (size_t i : u.entries) u.p2p = u.p2p && e[i].p2p, calls += e[i].calls;
    u.calls_per_entry = static_cast<double>(calls) / static_cast<double>(u.entries.size());
  }
  if (!p.any()) p = infer_sizes(units, e, world);
  for (auto& u : units) classify(u, e, p);

  // Still ambiguous (same size, no rank evidence): a rank is in one group per dimension, so groups of a rank take
  // distinct dimensions; the busiest takes the smallest stride (TP talks every layer, DP once per step).
  std::map<std::pair<int, int>, std::set<std::string>> used;  // (rank, size) → dimensions taken
  for (const auto& u : units)
    if (!u.parallelism.empty())
      for (size_t i : u.entries) used[{e[i].rank, u.n}].insert(u.parallelism);
  std::vector<size_t> pending;
  for (size_t k = 0; k < units.size(); ++k)
    if (units[k].parallelism.empty()) pending.push_back(k);
  std::stable_sort(pending.begin(), pending.end(),
                   [&](size_t a, size_t b) { return units[a].calls_per_entry > units[b].calls_per_entry; });
  for (size_t k : pending) {
    Unit& u = units[k];
    for (const auto& d : u.candidates) {
      bool free = true;
      for (size_t i : u.entries) free = free && !used[{e[i].rank, u.n}].count(d);
      if (free) {
        u.parallelism = d;
        break;
      }
    }
    if (u.parallelism.empty()) u.parallelism = u.candidates.front();
    for (size_t i : u.entries) used[{e[i].rank, u.n}].insert(u.parallelism);
  }

  // Split each set into groups of n: along the dimension's stride when sizes are given, else consecutively.
  const bool given = p.any();
  std::vector<InferredComm> out;
  for (const auto& u : units) {
    std::map<int, std::vector<std::pair<int, uint64_t>>> split;
    const bool along = given && !u.exact && std::count(kDims.begin(), kDims.end(), u.parallelism);
    for (size_t j = 0; j < u.entries.size(); ++j) {
      const CommEntry& m = e[u.entries[j]];
      int gid = 0;
      if (along) {
        const int s = megatron_stride(u.parallelism, p);
        gid = m.rank - ((m.rank / s) % std::max(u.n, 1)) * s;
      } else if (!u.exact) {
        gid = static_cast<int>(j) / std::max(u.n, 1);
      }
      split[gid].emplace_back(m.rank, m.ptr);
    }
    for (auto& [gid, ms] : split) out.push_back({u.parallelism, u.n, std::move(ms)});
  }
  return out;
}

}  // namespace stepsim::profile
