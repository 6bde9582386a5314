#include "stepsim/ingest/trace/trace_workload.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <sstream>

#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/trace_program.hpp"

namespace stepsim::trace {

using workload::GroupKind;
using workload::Op;
using workload::OpKind;
using workload::RankLayout;
using workload::Stream;

namespace {

std::string rank_list(const std::vector<int>& r) {
  std::ostringstream o;
  o << '[';
  for (size_t i = 0; i < r.size(); ++i) o << (i ? ", " : "") << r[i];
  o << ']';
  return o.str();
}

// The Megatron group a communicator is, seen from `rank` under the job's layout; otherwise a guess by shape.
GroupKind classify(const TracedOp& op, int rank, const RankLayout& layout) {
  if (op.kind == OpKind::P2P) return GroupKind::Pp;
  if (op.group) return *op.group;
  const std::vector<int>& g = op.group_ranks;
  if (g.empty()) return GroupKind::Dp;
  for (GroupKind k : {GroupKind::Tp, GroupKind::Cp, GroupKind::Ep, GroupKind::Dp, GroupKind::Edp, GroupKind::Etp,
                      GroupKind::Pp}) {
    const int n = layout.group_size(k);
    if (n != static_cast<int>(g.size())) continue;
    const int gid = layout.group_id(k, rank);
    bool same = true;
    for (int i = 0; i < n && same; ++i) same = layout.member(k, gid, i) == g[i];
    if (same) return k;
  }
  // Every rank, yet no dimension's group (DP = 1: the gradient norm's all-reduce spans TP x PP): not data parallel.
  if (static_cast<int>(g.size()) == layout.world() && layout.world() > 1) return GroupKind::World;
  return guess_group(false, op.coll, g, layout.world());
}

// Drops Host ops; an op that waited on one waits on what it waited on instead.
void drop_host_gaps(TracedRank& tr) {
  std::vector<int> new_index(tr.ops.size(), -1);
  std::vector<std::vector<int>> deps_of(tr.ops.size());
  std::vector<TracedOp> kept;
  for (size_t i = 0; i < tr.ops.size(); ++i) {
    TracedOp& op = tr.ops[i];
    std::vector<int> deps;
    for (int d : op.after) {
      if (new_index[d] >= 0) deps.push_back(new_index[d]);
      else deps.insert(deps.end(), deps_of[d].begin(), deps_of[d].end());
    }
    if (op.kind == OpKind::Compute && op.category == workload::ComputeCategory::Host) {
      deps_of[i] = deps;
      continue;
    }
    op.after = std::move(deps);
    new_index[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(op));
  }
  tr.ops = std::move(kept);
}

// Dependencies of an imported kernel trace, which records no events between streams (docs/TRACE-SIMULATION.md):
// a communication kernel waits for the compute kernel before it (PyTorch makes the NCCL stream wait for the
// current stream); a compute kernel waits for the communication kernels that had ended when it started (what
// was seen to happen before it). Where the GPU sat idle before a compute kernel with nothing to wait for, the
// CPU was late: a Host op of that length keeps the gap.
void infer_dependencies(TracedRank& tr, bool host_gaps) {
  std::vector<TracedOp> out;
  out.reserve(tr.ops.size());
  int last_compute = -1;
  int64_t compute_end = 0;  // latest end of a compute kernel so far (measured)
  // Per engine stream: the comm ops so far (output index) and the running maximum of their measured ends.
  std::map<int, std::pair<std::vector<int>, std::vector<int64_t>>> comm;
  std::map<int, size_t> waited;  // per stream: how many of its ops compute already waits for
  for (TracedOp& op : tr.ops) {
    const int64_t start = std::max<int64_t>(0, op.start_ns);
    if (op.kind != OpKind::Compute) {
      if (last_compute >= 0) op.after.push_back(last_compute);
      const int s = static_cast<int>(op.kind == OpKind::P2P ? Stream::Pp : stream_of(op.group.value_or(GroupKind::Dp)));
      auto& [idx, ends] = comm[s];
      idx.push_back(static_cast<int>(out.size()));
      ends.push_back(std::max(ends.empty() ? int64_t{0} : ends.back(), start + op.duration_ns));
      out.push_back(std::move(op));
      continue;
    }
    int64_t ready = compute_end;
    for (auto& [s, v] : comm) {
      const auto& [idx, ends] = v;
      const size_t n = static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), start) - ends.begin());
      if (n == 0) continue;
      ready = std::max(ready, ends[n - 1]);
      if (n > waited[s]) {
        op.after.push_back(idx[n - 1]);
        waited[s] = n;
      }
    }
    if (host_gaps && start > ready) {
      TracedOp gap;
      gap.name = "host gap";
      gap.category = workload::ComputeCategory::Host;
      gap.duration_ns = start - ready;
      gap.start_ns = ready;
      gap.after = op.after;
      out.push_back(std::move(gap));
    }
    compute_end = std::max(compute_end, start + op.duration_ns);
    out.push_back(std::move(op));
    last_compute = static_cast<int>(out.size()) - 1;
  }
  tr.ops = std::move(out);
}

// One traced rank's ops as a Program whose communicators and peers are program-local indices.
struct LocalProgram {
  workload::Program program;
  std::vector<std::vector<int>> comms;  // as the traced rank names them (global ranks)
  std::vector<int> peers;
};

LocalProgram build_program(const TracedRank& tr, const RankLayout& layout, TraceWorkload& counts) {
  LocalProgram lp;
  workload::Program& p = lp.program;
  p.stage = layout.coord(tr.rank).pp;
  p.eager_sends = tr.eager_sends;
  workload::ProgramBuilder b(p);
  std::map<std::vector<int>, int> comm_index;
  std::map<int, int> peer_index;
  std::vector<workload::ProgramBuilder::Ref> refs;
  refs.reserve(tr.ops.size());
  int64_t mem = 0, peak = 0;
  const int world = layout.world();
  std::vector<int> all_ranks(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) all_ranks[static_cast<size_t>(r)] = r;
  auto where = [&](size_t i) { return tr.path + ": op " + std::to_string(i) + " (" + tr.ops[i].name + ")"; };
  auto peer = [&](size_t i, int r) {
    if (r < 0 || r >= world || r == tr.rank) {
      throw InputError(where(i) + ": peer " + std::to_string(r) + " must be another rank of the job's " +
                       std::to_string(world) + " GPUs");
    }
    return peer_index.emplace(r, static_cast<int>(peer_index.size())).first->second;
  };
  for (size_t i = 0; i < tr.ops.size(); ++i) {
    const TracedOp& t = tr.ops[i];
    Op op;
    op.kind = t.kind;
    op.phase = t.phase;
    op.mem_alloc_at_start = t.mem_alloc_bytes;
    op.mem_free_at_end = t.mem_free_bytes;
    mem += t.mem_alloc_bytes;
    peak = std::max(peak, mem);
    mem -= t.mem_free_bytes;
    if (t.kind == OpKind::Compute) {
      op.stream = Stream::Compute;
      op.category = t.category;
      op.duration_ns = t.duration_ns;
      op.flops = t.flops;
      op.bytes = t.hbm_bytes;
      if (t.category == workload::ComputeCategory::Host) ++counts.host_gap_ops;
    } else if (t.kind == OpKind::Collective) {
      op.coll = t.coll;
      op.bytes = t.bytes;
      if (t.measured_time) {  // the engine keeps a collective's duration_ns when it is set
        op.duration_ns = std::max<int64_t>(1, t.duration_ns);
        ++counts.measured_comm_ops;
      }
      op.group = classify(t, tr.rank, layout);
      op.stream = stream_of(op.group);
      if (t.group_ranks.empty() && t.group_size > 0 && t.group_size < world &&
          layout.group_size(op.group) != t.group_size) {
        throw InputError(where(i) + ": a collective over " + std::to_string(t.group_size) +
                         " ranks without group_ranks, but the job's " + workload::name_of(op.group) + " group has " +
                         std::to_string(layout.group_size(op.group)) + "; give group_ranks or fix the job's parallelism");
      }
      // Without group_ranks or a smaller group_size, a collective ran on PyTorch's default group: the world.
      const bool world_group = t.group_ranks.empty() && (t.group_size < 0 || t.group_size >= world);
      const std::vector<int>& members = world_group ? all_ranks : t.group_ranks;
      if (!members.empty()) {
        if (!std::binary_search(members.begin(), members.end(), tr.rank)) {
          throw InputError(where(i) + ": group_ranks " + rank_list(members) + " do not include the rank itself (" +
                           std::to_string(tr.rank) + ")");
        }
        if (members.back() >= world || members.front() < 0) {
          throw InputError(where(i) + ": group_ranks " + rank_list(members) + " go beyond the job's " +
                           std::to_string(world) + " GPUs");
        }
        if (std::adjacent_find(members.begin(), members.end()) != members.end()) {
          throw InputError(where(i) + ": group_ranks " + rank_list(members) + " list a rank twice");
        }
        auto [it, fresh] = comm_index.emplace(members, static_cast<int>(lp.comms.size()));
        if (fresh) lp.comms.push_back(members);
        op.comm = it->second;
      }
    } else {
      op.group = GroupKind::Pp;
      op.stream = Stream::Pp;
      op.part_begin = static_cast<uint32_t>(p.p2p_parts.size());
      for (const TracedTransfer& s : t.sends) {
        p.p2p_parts.push_back({static_cast<uint32_t>(peer(i, s.peer)), true, s.bytes});
        op.send_next += s.bytes;  // totals, for the byte counts of reports
      }
      for (const TracedTransfer& r : t.recvs) {
        p.p2p_parts.push_back({static_cast<uint32_t>(peer(i, r.peer)), false, r.bytes});
        op.recv_prev += r.bytes;
      }
      if (t.sends.size() + t.recvs.size() > 65535) throw InputError(where(i) + ": more than 65535 transfers in one batch");
      op.part_count = static_cast<uint16_t>(t.sends.size() + t.recvs.size());
    }
    std::vector<workload::ProgramBuilder::Ref> deps;
    for (int d : t.after) deps.push_back(refs[static_cast<size_t>(d)]);
    refs.push_back(b.emit(op, t.name, deps));
  }
  lp.peers.resize(peer_index.size());
  for (const auto& [r, i] : peer_index) lp.peers[static_cast<size_t>(i)] = r;
  p.static_memory.traced = tr.static_memory_bytes;
  p.activation_peak = peak;
  p.stored_activation_peak = peak;  // a trace's allocations are what it recorded: no modelled working buffers
  return lp;
}

// A traced rank's global rank seen from a data-parallel peer `delta` replicas away.
int shift_dp(const RankLayout& layout, int rank, int delta) {
  workload::RankCoord c = layout.coord(rank);
  const int d = layout.data();
  c.dp = ((c.dp + delta) % d + d) % d;
  return layout.rank_of(c);
}

// Every communicator's members must issue the same collectives on it in the same order, and every pair's sends and
// receives must match, or the step deadlocks: say where they first differ.
void check_matching(const workload::Workload& w, const std::vector<int>& source, const std::vector<TracedRank>& traced,
                    const std::vector<int>& traced_index) {
  const int n = w.layout.world();
  struct Call {
    int coll;
    uint64_t bytes;
    uint32_t op;
  };
  std::vector<std::map<int, std::vector<Call>>> per_comm(w.communicators.size());
  std::map<std::pair<int, int>, std::vector<Call>> sends, recvs;
  for (int r = 0; r < n; ++r) {
    const workload::Program& p = w.program_of_rank(r);
    const workload::RankBinding& b = w.bindings[static_cast<size_t>(r)];
    for (uint32_t i = 0; i < p.ops.size(); ++i) {
      const Op& op = p.ops[i];
      if (op.kind == OpKind::Collective && op.comm >= 0) {
        per_comm[static_cast<size_t>(b.comms[static_cast<size_t>(op.comm)])][r].push_back(
            {static_cast<int>(op.coll), op.bytes, i});
      } else if (op.kind == OpKind::P2P) {
        for (uint32_t k = op.part_begin; k < op.part_begin + op.part_count; ++k) {
          const workload::P2PPart& part = p.p2p_parts[k];
          const int peer = b.peers[part.peer];
          if (part.send) sends[{r, peer}].push_back({0, part.bytes, i});
          else recvs[{peer, r}].push_back({0, part.bytes, i});
        }
      }
    }
  }
  auto file_of = [&](int r) { return traced[static_cast<size_t>(traced_index[static_cast<size_t>(source[r])])].path; };
  auto describe = [&](int r, const std::vector<Call>& calls, size_t k) -> std::string {
    if (k >= calls.size()) return "rank " + std::to_string(r) + " issues none";
    const workload::Program& p = w.program_of_rank(r);
    return "rank " + std::to_string(r) + " issues " + p.names[p.ops[calls[k].op].name] + " (" +
           workload::name_of(static_cast<workload::CollType>(calls[k].coll)) + ", " + std::to_string(calls[k].bytes) +
           " B, op " + std::to_string(calls[k].op) + " of " + file_of(r) + ")";
  };
  for (size_t c = 0; c < per_comm.size(); ++c) {
    const std::vector<int>& members = w.communicators[c];
    const std::vector<Call>& first = per_comm[c][members[0]];
    for (int m : members) {
      const std::vector<Call>& mine = per_comm[c][m];
      for (size_t k = 0; k < std::max(first.size(), mine.size()); ++k) {
        if (k < first.size() && k < mine.size() && first[k].coll == mine[k].coll && first[k].bytes == mine[k].bytes) continue;
        throw InputError("communicator " + rank_list(members) + ": collective #" + std::to_string(k) + " differs: " +
                         describe(members[0], first, k) + ", " + describe(m, mine, k) + "; the step would deadlock");
      }
    }
  }
  auto pair_error = [&](const std::pair<int, int>& pr, const std::string& what) {
    throw InputError("send/recv from rank " + std::to_string(pr.first) + " to rank " + std::to_string(pr.second) + ": " +
                     what + " (" + file_of(pr.first) + ", " + file_of(pr.second) + "); the step would deadlock");
  };
  for (const auto& [pr, s] : sends) {
    const auto it = recvs.find(pr);
    const size_t nr = it == recvs.end() ? 0 : it->second.size();
    if (nr != s.size()) pair_error(pr, std::to_string(s.size()) + " sends but " + std::to_string(nr) + " receives");
    for (size_t k = 0; k < s.size(); ++k) {
      if (s[k].bytes != it->second[k].bytes) {
        pair_error(pr, "transfer #" + std::to_string(k) + " is " + std::to_string(s[k].bytes) + " B sent but " +
                           std::to_string(it->second[k].bytes) + " B received");
      }
    }
  }
  for (const auto& [pr, r] : recvs) {
    if (!sends.count(pr)) pair_error(pr, "0 sends but " + std::to_string(r.size()) + " receives");
  }
}

}  // namespace

TraceWorkload build_trace_workload(const spec::JobSpec& job, std::vector<TracedRank> ranks,
                                   const TraceWorkloadOptions& opt) {
  const auto& par = job.parallelism;
  TraceWorkload out;
  workload::Workload& w = out.workload;
  w.job = job;
  // Measured kernels already ran beside the communication they overlapped: slowing them again would count it twice.
  if (!job.simulation.overlap_model_given) w.job.simulation.overlap_model = spec::OverlapModel::None;
  w.layout = RankLayout(par.tensor, par.context, par.data, par.pipeline, par.expert,
                        std::min(job.cluster.gpus_per_node, job.cluster.num_gpus));
  const RankLayout& layout = w.layout;
  const int n = layout.world();
  std::vector<int> traced_index(static_cast<size_t>(n), -1);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const TracedRank& tr = ranks[i];
    if (tr.world_size >= 0 && tr.world_size != n) {
      throw InputError(tr.path + ": world_size " + std::to_string(tr.world_size) + ", but the job runs " +
                       std::to_string(n) + " GPUs (cluster.num_gpus); trace the job at its size or extrapolate it");
    }
    if (tr.rank < 0 || tr.rank >= n) {
      throw InputError(tr.path + ": rank " + std::to_string(tr.rank) + " is outside the job's " + std::to_string(n) +
                       " GPUs");
    }
    if (traced_index[static_cast<size_t>(tr.rank)] >= 0) {
      throw InputError(tr.path + ": rank " + std::to_string(tr.rank) + " is given twice");
    }
    traced_index[static_cast<size_t>(tr.rank)] = static_cast<int>(i);
  }
  // Each rank runs its own trace, else a traced data-parallel peer's (the lowest), shifted by the replica distance.
  std::vector<int> delta(static_cast<size_t>(n), 0);
  out.source_of_rank.assign(static_cast<size_t>(n), -1);
  for (int r = 0; r < n; ++r) {
    if (traced_index[static_cast<size_t>(r)] >= 0) {
      out.source_of_rank[r] = r;
      continue;
    }
    workload::RankCoord c = layout.coord(r);
    const int own_dp = c.dp;
    for (int d = 0; d < layout.data(); ++d) {
      c.dp = d;
      const int cand = layout.rank_of(c);
      if (traced_index[static_cast<size_t>(cand)] >= 0) {
        out.source_of_rank[r] = cand;
        delta[static_cast<size_t>(r)] = own_dp - d;
        break;
      }
    }
    if (out.source_of_rank[r] < 0) {
      const workload::RankCoord rc = layout.coord(r);
      throw InputError("workload: rank " + std::to_string(r) + " (stage " + std::to_string(rc.pp) + ", tp " +
                       std::to_string(rc.tp) + ", cp " + std::to_string(rc.cp) +
                       ") has no trace, and no traced rank of the same stage, tensor and context rank to reuse (ranks traced "
                       "with --no-profile have no program)");
    }
  }
  out.traced = static_cast<int>(ranks.size());
  // Programs of the traced ranks.
  std::vector<LocalProgram> local;
  std::vector<int> program_of_traced(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    TracedRank& tr = ranks[i];
    if (!tr.explicit_deps) {
      for (TracedOp& op : tr.ops) {
        if (op.kind == OpKind::Collective && !op.group) op.group = classify(op, tr.rank, layout);
      }
      infer_dependencies(tr, opt.host_gaps);
    } else if (!opt.host_gaps) {
      drop_host_gaps(tr);
    }
    local.push_back(build_program(tr, layout, out));
    program_of_traced[i] = static_cast<int>(i);
  }
  // Bindings: each rank's communicators and peers in global ranks, communicators shared between members.
  std::map<std::vector<int>, int> comm_ids;
  w.bindings.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const int ti = traced_index[static_cast<size_t>(out.source_of_rank[r])];
    const LocalProgram& lp = local[static_cast<size_t>(ti)];
    workload::RankBinding& b = w.bindings[static_cast<size_t>(r)];
    b.program = program_of_traced[static_cast<size_t>(ti)];
    const int dd = delta[static_cast<size_t>(r)];
    for (const std::vector<int>& g : lp.comms) {
      std::vector<int> m;
      m.reserve(g.size());
      for (int x : g) m.push_back(dd ? shift_dp(layout, x, dd) : x);
      std::sort(m.begin(), m.end());
      auto [it, fresh] = comm_ids.emplace(m, static_cast<int>(w.communicators.size()));
      if (fresh) w.communicators.push_back(std::move(m));
      b.comms.push_back(it->second);
    }
    for (int x : lp.peers) b.peers.push_back(dd ? shift_dp(layout, x, dd) : x);
  }
  for (LocalProgram& lp : local) w.programs.push_back(std::move(lp.program));
  for (int st = 0; st < layout.pipeline(); ++st) {
    w.role_of_stage.push_back(w.bindings[static_cast<size_t>(layout.rank_of({0, 0, 0, st}))].program);
  }
  for (int r = 0; r < n; ++r) {
    for (const Op& op : w.program_of_rank(r).ops) w.model_flops_per_step += op.flops;
  }
  check_matching(w, out.source_of_rank, ranks, traced_index);
  return out;
}

}  // namespace stepsim::trace
