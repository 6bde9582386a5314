#include "stepsim/ingest/profile/profile.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>
#include <tuple>

#include "stepsim/ingest/profile/clock_sync.hpp"
#include "stepsim/ingest/profile/comm_infer.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::profile {
namespace {

// A log item of the alignment: one call, or a fused Send+Recv pair, or a folded 2:1 batch pair.
struct Item {
  AlignItem key;
  size_t first = 0;
  int64_t second = -1;
  bool batched = false;  // `second` is the logged twin of `first` (§4.1.1), not the other half of a SendRecv
};

std::vector<Item> log_items(const NcclLog& log, const std::vector<size_t>& calls) {
  std::vector<Item> items;
  for (size_t k = 0; k < calls.size(); ++k) {
    const NcclCall& c = log.calls[calls[k]];
    if (is_p2p(c.op)) {
      // ncclGroupStart; ncclSend; ncclRecv; ncclGroupEnd runs as one SendRecv kernel (thesis Table 4.1).
      Item it{{NcclOp::SendRecv, -1}, calls[k], -1};
      if (k + 1 < calls.size()) {
        const NcclCall& d = log.calls[calls[k + 1]];
        if (is_p2p(d.op) && d.op != c.op && d.comm == c.comm) {
          it.second = static_cast<int64_t>(calls[k + 1]);
          ++k;
        }
      }
      items.push_back(it);
      continue;
    }
    items.push_back({{c.op, c.datatype}, calls[k], -1});
  }
  return items;
}

// §4.1.1: one rank per TP group logs each call twice while its GPU runs one kernel. Detected when the rank has
// about twice as many items as kernels; consecutive identical calls (op, count, type) are then folded.
std::vector<Item> fold_batching(const NcclLog& log, std::vector<Item> items, size_t kernels, bool& folded) {
  folded = false;
  if (kernels == 0 || items.size() < 1.8 * static_cast<double>(kernels)) return items;
  std::vector<Item> out;
  for (size_t k = 0; k < items.size(); ++k) {
    if (k + 1 < items.size() && items[k].second < 0 && items[k + 1].second < 0) {
      const NcclCall& a = log.calls[items[k].first];
      const NcclCall& b = log.calls[items[k + 1].first];
      if (a.op == b.op && a.count == b.count && a.datatype == b.datatype) {
        out.push_back({items[k].key, items[k].first, static_cast<int64_t>(items[k + 1].first), true});
        ++k;
        folded = true;
        continue;
      }
    }
    out.push_back(items[k]);
  }
  return folded ? out : items;
}

}  // namespace

ParallelismSizes parse_parallelism(const std::string& text) {
  ParallelismSizes p;
  size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string kv = text.substr(pos, comma - pos);
    const size_t eq = kv.find('=');
    int v = 0;
    const std::string key = eq == std::string::npos ? kv : kv.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : kv.substr(eq + 1);
    auto r = std::from_chars(val.data(), val.data() + val.size(), v);
    if (eq == std::string::npos || r.ec != std::errc() || r.ptr != val.data() + val.size() || v < 1 || v > 1 << 20)
      throw InputError("--parallelism: '" + kv + "' is not DIM=N with N a positive integer (e.g. tp=4,pp=2)");
    if (key == "tp") p.tp = v;
    else if (key == "pp") p.pp = v;
    else if (key == "dp") p.dp = v;
    else if (key == "ep") p.ep = v;
    else if (key == "cp") p.cp = v;
    else throw InputError("--parallelism: unknown dimension '" + key + "' (one of tp, pp, dp, ep, cp)");
    pos = comma + 1;
    if (comma == text.size()) break;
  }
  return p;
}

BusFactors bus_factors(NcclOp op, const std::string& algorithm, int n) {
  const double f = n > 0 ? static_cast<double>(n - 1) / n : 1.0;
  switch (op) {
    case NcclOp::AllReduce:
      if (algorithm == "TREE") return {2.0, 1.0, 2.0};
      return {2 * f, f, 2 * f};
    case NcclOp::AllGather:
    case NcclOp::ReduceScatter:
    case NcclOp::AllToAll: return {f, f, f};
    default: return {1.0, 1.0, 1.0};
  }
}

int64_t algbw_bytes(const NcclCall& c, int n) {
  const int64_t b = c.bytes();
  // RCCL's AllToAll logs the elements sent to each peer: the send buffer holds n of them.
  if ((c.op == NcclOp::AllGather || c.op == NcclOp::ReduceScatter || c.op == NcclOp::AllToAll) && n > 0) return b * n;
  return b;
}

std::string call_parallelism(const ProfileResult& r, const ProfiledCall& c) {
  const std::string comm = c.comm >= 0 ? r.comms[c.comm].parallelism : "unknown";
  if (is_p2p(r.log.calls[c.call].op)) return comm == "EP" ? comm : "PP";
  return comm;
}

ProfileResult run_profile(NcclLog log, std::vector<NsysDb> dbs, const ProfileOptions& opt) {
  ProfileResult r;
  r.log = std::move(log);
  r.timing = !dbs.empty();
  r.parallelism = opt.parallelism;
  r.parallelism_inferred = !opt.parallelism.any();
  r.model = opt.model;
  for (auto& db : dbs) {
    for (auto& k : db.kernels) r.kernels.push_back(std::move(k));
    for (auto& n : db.nvtx) r.nvtx.push_back(std::move(n));
  }
  std::stable_sort(r.kernels.begin(), r.kernels.end(), [](const NsysKernel& a, const NsysKernel& b) {
    return std::tie(a.db, a.start_ns) < std::tie(b.db, b.start_ns);
  });
  const NcclLog& L = r.log;

  // Processes and global ranks (eq. 4.6): node index from the sorted host names, GPUs per node from the largest
  // local device; a process seen twice on one GPU (two runs in one log) gets the next free rank.
  std::map<std::tuple<std::string, int64_t, int>, size_t> proc_of;
  std::set<std::string> hosts;
  int gpn = 1;
  for (size_t i = 0; i < L.calls.size(); ++i) {
    const auto& o = L.calls[i].at;
    auto [it, fresh] = proc_of.try_emplace({o.host, o.pid, o.cuda_dev}, r.ranks.size());
    if (fresh) {
      RankProcess p;
      p.host = o.host;
      p.pid = o.pid;
      p.cuda_dev = o.cuda_dev;
      r.ranks.push_back(p);
      hosts.insert(o.host);
      gpn = std::max(gpn, o.cuda_dev + 1);
    }
    r.ranks[it->second].calls.push_back(i);
  }
  const std::vector<std::string> host_list(hosts.begin(), hosts.end());
  std::sort(r.ranks.begin(), r.ranks.end(), [](const RankProcess& a, const RankProcess& b) {
    return std::tie(a.host, a.cuda_dev, a.pid) < std::tie(b.host, b.cuda_dev, b.pid);
  });
  std::set<int> used;
  int next_free = 0;
  for (auto& p : r.ranks) {
    const int node = static_cast<int>(std::lower_bound(host_list.begin(), host_list.end(), p.host) - host_list.begin());
    int rank = node * gpn + std::max(p.cuda_dev, 0);
    if (used.count(rank)) rank = std::max(next_free, static_cast<int>(host_list.size()) * gpn);
    used.insert(rank);
    next_free = std::max(next_free, rank + 1);
    p.rank = rank;
  }
  std::sort(r.ranks.begin(), r.ranks.end(), [](const RankProcess& a, const RankProcess& b) { return a.rank < b.rank; });
  std::map<std::pair<std::string, int64_t>, std::string> bus_of;
  for (const auto& i : L.inits) bus_of[{i.at.host, i.at.pid}] = i.bus_id;
  for (auto& p : r.ranks) {
    auto it = bus_of.find({p.host, p.pid});
    if (it != bus_of.end()) p.bus_id = it->second;
  }

  r.calls.resize(L.calls.size());
  for (size_t i = 0; i < L.calls.size(); ++i) r.calls[i].call = i;
  for (const auto& p : r.ranks)
    for (size_t c : p.calls) r.calls[c].rank = p.rank;

  // Kernels of each process: same pid; a pid driving several GPUs splits by device.
  std::map<int64_t, int> procs_per_pid;
  for (const auto& p : r.ranks) ++procs_per_pid[p.pid];
  std::vector<bool> kernel_taken(r.kernels.size(), false);
  for (auto& p : r.ranks) {
    for (size_t k = 0; k < r.kernels.size(); ++k) {
      const NsysKernel& kn = r.kernels[k];
      if (kn.pid != p.pid || kernel_taken[k]) continue;
      if (procs_per_pid[p.pid] > 1 && kn.device != p.cuda_dev) continue;
      if (kn.nccl && kn.nccl->op == NcclOp::Unknown) continue;  // generic kernels carry no collective
      p.kernels.push_back(k);
      kernel_taken[k] = true;
    }
    std::stable_sort(p.kernels.begin(), p.kernels.end(),
                     [&](size_t a, size_t b) { return r.kernels[a].start_ns < r.kernels[b].start_ns; });
  }
  for (size_t k = 0; k < r.kernels.size(); ++k)
    if (!kernel_taken[k]) r.unmatched_kernels.push_back(static_cast<int64_t>(k));

  // Alignment per process.
  std::vector<bool> twin(L.calls.size(), false);  // the second call of a folded 2:1 pair
  for (auto& p : r.ranks) {
    if (p.kernels.empty()) continue;
    auto items = fold_batching(L, log_items(L, p.calls), p.kernels.size(), p.batched);
    for (const auto& it : items)
      if (it.batched) twin[static_cast<size_t>(it.second)] = true;
    std::vector<AlignItem> a, b;
    for (size_t k : p.kernels) {
      const auto& n = r.kernels[k].nccl;
      // The kernel's type is that of the reduction; non-reducing kernels print none.
      a.push_back({n ? n->op : NcclOp::Unknown, n ? n->datatype : -1});
    }
    for (const auto& it : items) b.push_back(it.key);
    const AlignResult ar = align_ops(a, b, opt.align);
    p.mismatches = ar.mismatches;
    std::vector<bool> kmatched(p.kernels.size(), false);
    for (auto [ka, lb] : ar.matches) {
      kmatched[ka] = true;
      const int64_t kidx = static_cast<int64_t>(p.kernels[ka]);
      r.calls[items[lb].first].kernel = kidx;
      if (items[lb].second >= 0) r.calls[items[lb].second].kernel = kidx;
    }
    for (size_t k = 0; k < p.kernels.size(); ++k)
      if (!kmatched[k]) r.unmatched_kernels.push_back(static_cast<int64_t>(p.kernels[k]));
  }
  std::sort(r.unmatched_kernels.begin(), r.unmatched_kernels.end());
  for (const auto& c : r.calls) r.matched += c.kernel >= 0;

  // Logical communicators (§4.2.3): one entry per process and comm pointer with its sequence of (op, count, type)
  // and what its init line says; comm_infer.cpp groups and classifies them.
  std::map<std::tuple<std::string, int64_t, uint64_t>, const CommInit*> init_of;  // (host, pid, comm)
  for (const auto& i : L.inits) init_of.try_emplace({i.at.host, i.at.pid, i.comm}, &i);
  std::vector<CommEntry> entries;
  std::map<std::pair<int, uint64_t>, std::vector<size_t>> calls_of;  // (rank, comm) → calls
  for (const auto& p : r.ranks) {
    std::map<uint64_t, size_t> entry_of;
    std::map<uint64_t, std::set<int>> peers;
    for (size_t c : p.calls) {
      const NcclCall& call = L.calls[c];
      auto [it, fresh] = entry_of.try_emplace(call.comm, entries.size());
      if (fresh) {
        CommEntry ce;
        ce.rank = p.rank;
        ce.ptr = call.comm;
        ce.p2p = true;
        ce.host = p.host;
        ce.device = p.cuda_dev;
        entries.push_back(ce);
      }
      CommEntry& k = entries[it->second];
      calls_of[{p.rank, call.comm}].push_back(c);
      if (call.nranks > 0) k.nranks = call.nranks;
      const bool p2p = is_p2p(call.op);
      k.p2p = k.p2p && p2p;
      if (p2p) peers[call.comm].insert(call.root);  // a p2p line's "root" is the peer
      // Batched twins and the Send/Recv order inside a group do not distinguish communicators.
      if (twin[c]) continue;
      ++k.calls;
      k.seq.emplace_back(static_cast<int>(p2p ? NcclOp::SendRecv : call.op), p2p ? 0 : call.count, call.datatype);
    }
    for (auto& [ptr, idx] : entry_of) {
      CommEntry& k = entries[idx];
      k.peers = static_cast<int>(peers[ptr].size());
      auto in = init_of.find({p.host, p.pid, ptr});
      if (in == init_of.end()) continue;
      if (k.nranks <= 0) k.nranks = in->second->nranks;
      if (in->second->nranks == k.nranks) {
        k.local_rank = in->second->rank;
        k.comm_id = in->second->comm_id;
      }
    }
  }
  for (auto& ic : infer_comms(std::move(entries), static_cast<int>(r.ranks.size()), r.parallelism)) {
    LogicalComm lc;
    lc.parallelism = ic.parallelism;
    lc.size = ic.size;
    const int idx = static_cast<int>(r.comms.size());
    for (auto& m : ic.members) {
      lc.ranks.push_back(m.first);
      for (size_t c : calls_of[m]) r.calls[c].comm = idx;
    }
    r.comms.push_back(std::move(lc));
  }
  // Names: per parallelism type, numbered in order of their lowest rank.
  {
    std::vector<size_t> order(r.comms.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return r.comms[a].ranks.front() < r.comms[b].ranks.front(); });
    std::map<std::string, int> next;
    for (size_t i : order) {
      auto& c = r.comms[i];
      const std::string prefix = c.parallelism == "collective" ? "COMM" : c.parallelism;
      c.name = prefix + "_Group_" + std::to_string(next[prefix]++);
    }
  }

  // Clock offsets: the calls of one logical communicator with the same opCount are one collective instance (matched
  // by operation, so a rank's missing kernel drops it from that instance only); each rank's node is its log host.
  if (r.timing && opt.sync_clocks) {
    // (comm, opCount, k): the k-th call of a rank with that opCount on that communicator; k is 0 where opCounts are
    // unique (NCCL's per-communicator counter) and the call's order where a log repeats them.
    std::map<std::tuple<int, uint64_t, int>, CollectiveInstance> by_op;
    std::map<std::tuple<int, int, uint64_t>, int> seen;  // (comm, rank, opCount) → calls so far
    for (const auto& c : r.calls)
      if (c.kernel >= 0 && c.comm >= 0 && !twin[c.call] && !is_p2p(L.calls[c.call].op)) {
        const uint64_t op = L.calls[c.call].op_count;
        const int k = seen[{c.comm, c.rank, op}]++;
        by_op[{c.comm, op, k}].emplace_back(c.rank, r.kernels[c.kernel].start_ns);
      }
    std::vector<CollectiveInstance> instances;
    for (auto& [key, inst] : by_op) instances.push_back(std::move(inst));
    std::map<int, std::string> host_of;
    for (const auto& p : r.ranks) host_of[p.rank] = p.host;
    const auto off = clock_offsets(instances, host_of);
    for (auto& p : r.ranks) {
      auto it = off.find(p.rank);
      if (it != off.end()) p.clock_offset_ns = it->second;
    }
  }

  // Bottleneck per logical communicator (§4.2.5): pairs on one host by the topology of that host, pairs across
  // hosts by its NET link; with no topology for a host, the conservative minimum of every logged link.
  std::map<std::string, const TopologyBlock*> topo_of;
  double min_link = 0;
  for (const auto& t : L.topologies) {
    topo_of.try_emplace(t.host, &t);  // the first block of each host (§4.2.1 item 4)
    for (const auto& l : t.links)
      if (l.type != "LOC" && l.bw_GBps > 0 && (min_link == 0 || l.bw_GBps < min_link)) min_link = l.bw_GBps;
  }
  std::map<int, const RankProcess*> proc_by_rank;
  for (const auto& p : r.ranks) proc_by_rank[p.rank] = &p;
  for (auto& c : r.comms) {
    double bw = 0;
    std::string link;
    bool known = true;
    for (size_t i = 0; i < c.ranks.size() && known; ++i)
      for (size_t j = i + 1; j < c.ranks.size() && known; ++j) {
        const RankProcess* a = proc_by_rank[c.ranks[i]];
        const RankProcess* b = proc_by_rank[c.ranks[j]];
        std::optional<TopologyBlock::Bottleneck> bn;
        if (a->host == b->host) {
          auto t = topo_of.find(a->host);
          if (t != topo_of.end()) bn = t->second->gpu_pair_bottleneck(a->bus_id, b->bus_id);
        } else {
          auto ta = topo_of.find(a->host), tb = topo_of.find(b->host);
          if (ta != topo_of.end()) bn = ta->second->net_bottleneck();
          if (tb != topo_of.end()) {
            auto nb = tb->second->net_bottleneck();
            if (nb && (!bn || nb->bw_GBps < bn->bw_GBps)) bn = nb;
          }
        }
        if (!bn || bn->bw_GBps <= 0) {
          known = false;
          break;
        }
        if (bw == 0 || bn->bw_GBps < bw) {
          bw = bn->bw_GBps;
          link = bn->link;
        }
      }
    if (known && bw > 0) {
      c.bottleneck_GBps = bw;
      c.bottleneck_link = link;
    } else if (min_link > 0) {
      c.bottleneck_GBps = min_link;
      char buf[64];
      std::snprintf(buf, sizeof buf, "Estimated (min: %g GB/s)", min_link);
      c.bottleneck_link = buf;
    }
  }

  // Times after synchronisation and bandwidths (eq. 4.10-4.16).
  for (auto& pc : r.calls) {
    if (pc.kernel < 0) continue;
    const NcclCall& call = L.calls[pc.call];
    const NsysKernel& k = r.kernels[pc.kernel];
    const int64_t off = proc_by_rank.count(pc.rank) ? proc_by_rank[pc.rank]->clock_offset_ns : 0;
    pc.start_ns = k.start_ns + off;
    pc.end_ns = k.end_ns + off;
    const int n = pc.comm >= 0 ? r.comms[pc.comm].size : (call.nranks > 0 ? call.nranks : 1);
    const std::string algo = !call.algorithm.empty() ? call.algorithm : (k.nccl ? k.nccl->algorithm : "");
    const BusFactors f = bus_factors(call.op, algo, n);
    const double dur_s = static_cast<double>(k.end_ns - k.start_ns) / 1e9;
    pc.bus_factor = f.gamma;
    if (dur_s > 0) {
      pc.algbw_GBps = static_cast<double>(algbw_bytes(call, n)) / dur_s / 1e9;
      pc.busbw_GBps = pc.algbw_GBps * f.gamma;
    }
    if (pc.comm >= 0 && r.comms[pc.comm].bottleneck_GBps > 0) {
      const double bn = r.comms[pc.comm].bottleneck_GBps;
      pc.theo_algbw_GBps = bn * f.alpha;
      pc.theo_busbw_GBps = bn * f.beta;
      pc.efficiency_pct = pc.algbw_GBps / pc.theo_algbw_GBps * 100;
      pc.bus_efficiency_pct = pc.busbw_GBps / pc.theo_busbw_GBps * 100;
    }
  }
  return r;
}

}  // namespace stepsim::profile
