#include "stepsim/sim/engine.hpp"

#include "stepsim/sim/contended_network.hpp"
#include "stepsim/sim/event_queue.hpp"
#include "stepsim/sim/rank_symmetry.hpp"
#include "stepsim/cost/overlap/overlap_describe.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace stepsim::sim {

using workload::GroupKind;
using workload::kNumGroupKinds;
using workload::kNumStreams;
using workload::Op;
using workload::OpKind;
using workload::Program;
using workload::Stream;

void assign_compute_durations(workload::Workload& w, const cost::ComputeModel& model) {
  for (Program& p : w.programs) {
    for (Op& op : p.ops) {
      if (op.kind == OpKind::Compute) op.duration_ns = model.duration_ns(op);
    }
  }
}

namespace {

struct StreamState {
  uint32_t next = 0;  // position in Program::stream_ops of the next op to start
  uint32_t done = 0;  // ops completed
  bool busy = false;
  int64_t post = 0, begin = 0;
  // Host issue model: since when the next op has been ready but not issued (-1: it is not waiting for the host), and
  // how long the op in flight waited so.
  int64_t host_blocked = -1, host_wait = 0;
};

// The two pipeline streams: toward the next stage (and every batched exchange) and toward the previous one.
constexpr int kPpStream = static_cast<int>(Stream::Pp), kPpPrevStream = static_cast<int>(Stream::PpPrev);
constexpr int p2p_slot(int stream) { return stream == kPpPrevStream ? 1 : 0; }

struct RankState {
  StreamState s[kNumStreams];
  int64_t mem = 0, peak = 0, finish = 0;
  // Host issue model (Program::host_prefix): the host issues ops in program order from op `host_from` on, starting at
  // `host_base`; it stops after host sync op number `sync_pos` (Program::host_syncs) until that op has ended.
  // `host_wake`: the time of the earliest wake-up event queued for ops the host has not issued yet.
  int64_t host_base = 0, host_wake = INT64_MAX;
  uint32_t host_from = 0, sync_pos = 0;
  // Per pipeline stream: transfers of its exchange in flight, and the latest end among those done.
  int32_t p2p_remaining[2] = {0, 0};
  int64_t p2p_end[2] = {0, 0};
};

// One direction of a pipeline link: sends of `from` to its next (or previous) stage matched in FIFO order
// with that peer's receives. Megatron's schedules never leave more than one side waiting.
struct Channel {
  bool pending = false;
  bool is_send = false;
  uint8_t stream = 0;  // the pipeline stream the waiting side posted on
  int64_t t = 0;
  uint64_t bytes = 0;
};

// A collective whose end is queued: its members are completed together when it pops.
constexpr GroupKind kExplicitGroup = GroupKind::kCount;  // CollectiveDone::group of a trace's own communicator
struct CollectiveDone {
  GroupKind group;  // kExplicitGroup: gid indexes Workload::communicators
  uint8_t stream;
  int gid;
  int64_t begin;
};
constexpr int kCollectiveDone = 8;  // queue "stream" tag of a CollectiveDone entry (streams are 0..7)
constexpr int kHostWake = 9;        // queue "stream" tag: the host has issued an op a stream of the rank waits for
static_assert(kNumStreams <= kCollectiveDone);

// A matched send/recv carried by a ContendedNetwork, waiting for its completion.
struct PendingTransfer {
  int src, dst;
  int64_t begin;
  uint64_t bytes;
  uint8_t src_stream, dst_stream;
};
constexpr uint64_t kTransferTag = 1ull << 63;  // network tags: collective slot, or this bit | transfer slot

// The compute op in flight on a rank's compute stream under an overlap model: isolated work left (ns at
// full speed), the current rate (1 / (1 + slowdown)), since when, and the key of its live end event.
struct ComputeProgress {
  double left = 0;
  double rate = 1;
  int64_t since = 0;
  int64_t isolated = 0;  // its whole duration at full speed (straggler factor included)
  uint64_t key = 0;
};

// Cache of slowdowns: the compute op and the communication ops in flight (one per communication stream, in
// stream order), by address in their shared Program.
struct OverlapKey {
  std::array<const Op*, 7> ops{};
  bool operator==(const OverlapKey&) const = default;
};
struct OverlapKeyHash {
  size_t operator()(const OverlapKey& k) const {
    uint64_t h = 0;
    for (const Op* op : k.ops) h = (h ^ reinterpret_cast<uintptr_t>(op)) * 0x100000001B3ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

struct PendingCollective {
  uint32_t arrived = 0;
  int64_t last_arrival = 0;
};

// Trace-driven send/recv between one ordered pair of ranks: the posted sides not yet matched, all of one kind
// (FIFO, as NCCL matches a pair's sends and receives in order). Trace-driven exchanges all run on the pp stream.
struct PairSide {
  bool is_send;
  int64_t t;
  uint64_t bytes;
  int64_t arrived = -1;  // an eager send's data at the receiver from this time; -1 = not sent yet (rendezvous)
};

struct CollKey {
  uint64_t bytes;
  int coll, ranks, nodes, rpn;
  bool operator==(const CollKey&) const = default;
};
struct CollKeyHash {
  size_t operator()(const CollKey& k) const {
    uint64_t h = k.bytes * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<uint64_t>(k.coll) << 56) ^ (static_cast<uint64_t>(k.ranks) << 32) ^
         (static_cast<uint64_t>(k.nodes) << 16) ^ static_cast<uint64_t>(k.rpn);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// kOverlap: compiled with the overlap model's bookkeeping; the engine without it stays as lean as before (the
// checks cost 20% of the event rate when they were run-time branches).
template <bool kOverlap>
class Engine {
 public:
  Engine(const workload::Workload& w, const cost::CollectiveModel& comm, const EngineOptions& opt)
      : w_(w), layout_(w.layout), comm_(comm), network_(opt.network), overlap_(opt.overlap),
        peak_flops_(opt.peak_flops), hbm_Bps_(opt.hbm_Bps), progress_fn_(opt.progress),
        next_report_(opt.progress ? 0 : UINT64_MAX) {
    const int n = layout_.world();
    if (n > (1 << EventQueue::kRankBits)) throw std::runtime_error("engine: more ranks than the event queue holds");
    prog_.resize(n);
    slow_.assign(n, 1.0);
    for (const auto& [r, f] : w.job.cluster.slow_ranks) {
      if (r >= 0 && r < n) slow_[r] = f;
    }
    if (!w.bindings.empty() && static_cast<int>(w.bindings.size()) != n) {
      throw std::runtime_error("engine: rank bindings do not cover the world");
    }
    for (int r = 0; r < n; ++r) {
      prog_[r] = &w.program_of_rank(r);
    }
    for (const Program& p : w.programs) host_ = host_ || !p.host_prefix.empty();
    comm_pending_.resize(w.communicators.size());
    comm_geometry_.reserve(w.communicators.size());
    for (const auto& members : w.communicators) comm_geometry_.push_back(explicit_geometry(members));
    fwd_.resize(n);
    bwd_.resize(n);
    sym_ = find_rank_symmetry(w, opt.record_ranks, opt.all_ranks, network_ != nullptr);
    // State only for the ranks simulated (a million-GPU job mirrors all but a few hundred).
    slot_.assign(n, -1);
    for (int r = 0; r < n; ++r) {
      if (sym_.rep[r] != r) continue;
      slot_[r] = static_cast<int32_t>(simulated_.size());
      simulated_.push_back(r);
      total_ops_ += static_cast<int64_t>(prog_[r]->ops.size());
    }
    ranks_.resize(simulated_.size());
    if constexpr (kOverlap) progress_.resize(simulated_.size());
    for (int r : simulated_) state(r).mem = state(r).peak = prog_[r]->static_memory.total();
    for (int g = 0; g < kNumGroupKinds; ++g) {
      const auto kind = static_cast<GroupKind>(g);
      pending_[g].resize(layout_.num_groups(kind));
      geometry_[g].resize(layout_.num_groups(kind));
      // A collective waits for its group's simulated members (all of them without mirrored ranks).
      arrivals_[g].assign(layout_.num_groups(kind), sym_.mirrored() ? 0 : layout_.group_size(kind));
      if (sym_.mirrored()) {
        for (int r : simulated_) ++arrivals_[g][layout_.group_id(kind, r)];
        simulated_members_[g].resize(layout_.num_groups(kind));
      }
    }
    record_index_.assign(n, -1);
    for (int r : opt.record_ranks) {
      if (r < 0 || r >= n || record_index_[r] >= 0) continue;
      record_index_[r] = static_cast<int>(result_.recorded.size());
      result_.recorded.push_back(RankTimeline{r, {}, {}});
      result_.recorded.back().memory.push_back({0, state(r).mem});
    }
  }

  SimResult run() {
    const auto t0 = std::chrono::steady_clock::now();
    const int n = layout_.world();
    for (int r : simulated_) try_start_all(r, 0);
    // Each event: "the op in flight on (rank, stream) ends at t", or a collective ending on all members.
    while (true) {
      const int64_t tn = network_ ? network_->next_event_ns() : INT64_MAX;
      if (queue_.empty() && tn == INT64_MAX) break;
      // Ties go to the queue first: ops ending at t free their streams before the network's completions at t.
      if (tn != INT64_MAX && (queue_.empty() || tn < queue_.top_time())) {
        network_done(tn);
        continue;
      }
      const EventQueue::Entry e = queue_.pop();
      const int stream = EventQueue::stream_of(e);
      // A compute op whose speed changed has a newer end event; the old one is dropped here.
      if constexpr (kOverlap) {
        if (stream == kComputeStream && e.key != progress_[slot_[EventQueue::rank_of(e)]].key) continue;
      }
      if (stream == kCollectiveDone) {
        finish_collective(EventQueue::rank_of(e), e.t);
      } else if (stream == kHostWake) {
        const int r = EventQueue::rank_of(e);
        if (state(r).host_wake == e.t) state(r).host_wake = INT64_MAX;
        try_start_all(r, e.t);
      } else {
        ++result_.events;
        on_end(EventQueue::rank_of(e), stream, e.t);
      }
      if (result_.events >= next_report_) {  // never without a progress callback
        progress_fn_("simulating", std::min(static_cast<int64_t>(result_.events), total_ops_), total_ops_);
        next_report_ = result_.events + 65536;
      }
    }
    if (progress_fn_) progress_fn_("simulating", total_ops_, total_ops_);
    check_finished();
    result_.finish_ns.resize(n);
    result_.peak_bytes.resize(n);
    for (int r = 0; r < n; ++r) {
      const RankState& rs = state(sym_.rep[r]);  // a mirrored rank's results are its representative's
      result_.finish_ns[r] = rs.finish;
      result_.peak_bytes[r] = rs.peak;
      result_.step_ns = std::max(result_.step_ns, rs.finish);
    }
    result_.simulated_ranks = sym_.simulated;
    result_.mirrored_ranks = sym_.mirrored();
    result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::move(result_);
  }

 private:
  static constexpr int kComputeStream = static_cast<int>(Stream::Compute);

  void push(int64_t t, int rank, int stream) { queue_.push(t, rank, stream); }

  const Op& current_op(int rank, int stream) const {
    const Program& p = *prog_[rank];
    return p.ops[p.stream_ops[stream][state(rank).s[stream].next - 1]];
  }

  void on_end(int rank, int stream, int64_t t) {
    RankState& rs = state(rank);
    StreamState& ss = rs.s[stream];
    const Program& p = *prog_[rank];
    const uint32_t op_index = p.stream_ops[stream][ss.next - 1];
    const Op& op = p.ops[op_index];
    ss.busy = false;
    ++ss.done;
    rs.finish = std::max(rs.finish, t);
    if (op.mem_free_at_end) {
      rs.mem -= op.mem_free_at_end;
      note_memory(rank, t);
    }
    if (const int ri = record_index_[rank]; ri >= 0) {
      const bool slowed = kOverlap && stream == kComputeStream && op.kind == OpKind::Compute;
      result_.recorded[ri].ops.push_back(OpRecord{op_index, ss.post, ss.begin, t,
                                                  op.kind == OpKind::Compute ? slow_[rank] : 1.0,
                                                  slowed ? t - ss.begin - progress_[slot_[rank]].isolated : 0, ss.host_wait});
    }
    if constexpr (kOverlap) {
      if (op.kind != OpKind::Compute) overlap_changed(rank, t);
    }
    if (op.host_sync && host_) host_synced(rank, op_index, t);
    try_start_all(rank, t);
  }

  // ---- host issue model (kept out of line: jobs without it never call these)
  // When the host has issued op `i` (its issue done), or -1 while the host waits at an earlier sync op.
  [[gnu::noinline]] int64_t host_issued(int rank, uint32_t i) const {
    const RankState& rs = state(rank);
    const Program& p = *prog_[rank];
    if (p.host_prefix.empty() || i < rs.host_from) return 0;
    if (rs.sync_pos < p.host_syncs.size() && i > p.host_syncs[rs.sync_pos]) return -1;
    return rs.host_base + p.host_prefix[i + 1] - p.host_prefix[rs.host_from];
  }

  // Sync op `k` ended at t: the host, which issued it and then waited for it, goes on from the op after it.
  [[gnu::noinline]] void host_synced(int rank, uint32_t k, int64_t t) {
    RankState& rs = state(rank);
    const Program& p = *prog_[rank];
    if (p.host_prefix.empty() || rs.sync_pos >= p.host_syncs.size() || p.host_syncs[rs.sync_pos] != k) return;
    rs.host_base = std::max(t, rs.host_base + p.host_prefix[k + 1] - p.host_prefix[rs.host_from]);
    rs.host_from = k + 1;
    ++rs.sync_pos;
  }

  [[gnu::noinline]] void host_wake(int rank, int64_t at) {
    RankState& rs = state(rank);
    if (at >= rs.host_wake) return;
    rs.host_wake = at;
    push(at, rank, kHostWake);
  }

  void try_start_all(int rank, int64_t t) {
    for (int s = 0; s < kNumStreams; ++s) try_start(rank, s, t);
  }

  void try_start(int rank, int stream, int64_t t) {
    RankState& rs = state(rank);
    StreamState& ss = rs.s[stream];
    const Program& p = *prog_[rank];
    if (ss.busy || ss.next >= p.stream_ops[stream].size()) return;
    const uint32_t op_index = p.stream_ops[stream][ss.next];
    const Op& op = p.ops[op_index];
    for (uint32_t i = 0; i < op.wait_count; ++i) {
      const workload::Wait& w = p.waits[op.wait_begin + i];
      if (rs.s[static_cast<int>(w.stream)].done < w.count) return;
    }
    if (host_) {
      const int64_t issued = host_issued(rank, op_index);
      if (issued < 0 || issued > t) {
        if (ss.host_blocked < 0) ss.host_blocked = t;
        if (issued > t) host_wake(rank, issued);
        return;  // behind a sync the host still waits at (that op's end retries), or not issued yet
      }
      ss.host_wait = ss.host_blocked >= 0 ? t - ss.host_blocked : 0;
      ss.host_blocked = -1;
    }
    ss.busy = true;
    ++ss.next;
    ss.post = ss.begin = t;
    if (op.mem_alloc_at_start) {
      rs.mem += op.mem_alloc_at_start;
      rs.peak = std::max(rs.peak, rs.mem);
      note_memory(rank, t);
    }
    switch (op.kind) {
      case OpKind::Compute: {
        const double f = slow_[rank];
        const int64_t d = f == 1.0 ? op.duration_ns : std::llround(static_cast<double>(op.duration_ns) * f);
        if (kOverlap && stream == kComputeStream) {
          start_slowed_compute(rank, op, d, t);
        } else {
          push(t + d, rank, stream);
        }
        break;
      }
      case OpKind::Collective:
        if constexpr (kOverlap) overlap_changed(rank, t);  // this op is in flight from now (ss.busy)
        arrive(rank, stream, op, t);
        break;
      case OpKind::P2P:
        if constexpr (kOverlap) overlap_changed(rank, t);
        post_p2p(rank, stream, op, t);
        break;
    }
  }

  // ---- compute slowdown under overlap (kept out of line: the hot path without a model must stay small)
  [[gnu::noinline]] void start_slowed_compute(int rank, const Op& op, int64_t d, int64_t t) {
    ComputeProgress& cp = progress_[slot_[rank]];
    cp = ComputeProgress{static_cast<double>(d), 1.0 / (1.0 + slowdown(rank, op)), t, d, 0};
    cp.key = queue_.push(t + remaining_ns(cp), rank, kComputeStream);
  }

  static int64_t remaining_ns(const ComputeProgress& cp) {
    // The tolerance keeps float noise from adding a nanosecond to an exactly representable end.
    return std::max<int64_t>(0, static_cast<int64_t>(std::ceil(cp.left / cp.rate - 1e-6)));
  }

  // The set of communication ops in flight on `rank` changed at t: bank the running compute op's progress at its
  // old rate and, if its rate changes, queue its new end (the old end event becomes stale).
  [[gnu::noinline]] void overlap_changed(int rank, int64_t t) {
    const StreamState& cs = state(rank).s[kComputeStream];
    if (!cs.busy) return;
    const Op& op = current_op(rank, kComputeStream);
    if (op.kind != OpKind::Compute) return;
    ComputeProgress& cp = progress_[slot_[rank]];
    cp.left = std::max(0.0, cp.left - static_cast<double>(t - cp.since) * cp.rate);
    cp.since = t;
    const double rate = 1.0 / (1.0 + slowdown(rank, op));
    if (rate == cp.rate) return;
    cp.rate = rate;
    cp.key = queue_.push(t + remaining_ns(cp), rank, kComputeStream);
  }

  // The overlap model's slowdown of compute op `op` under the communication ops now in flight on `rank`.
  [[gnu::noinline]] double slowdown(int rank, const Op& op) {
    if (!cost::slowed_by_communication(op)) return 0.0;
    OverlapKey key;
    key.ops[0] = &op;
    int n = 0;
    for (int s = kComputeStream + 1; s < kNumStreams; ++s) {
      if (!state(rank).s[s].busy) continue;
      const Op& c = current_op(rank, s);
      if (c.kind == OpKind::Compute) continue;
      key.ops[1 + n++] = &c;
      if (n == 6) break;
    }
    if (n == 0) return 0.0;
    if (auto it = slowdown_cache_.find(key); it != slowdown_cache_.end()) return it->second;
    overlap_comms_.clear();
    for (int i = 1; i <= n; ++i) overlap_comms_.push_back(describe_comm(rank, *key.ops[i]));
    const cost::OverlapCompute c = cost::describe_overlap_compute(op, peak_flops_, hbm_Bps_);
    const double s = std::max(0.0, overlap_->compute_slowdown(c, overlap_comms_));
    slowdown_cache_.emplace(key, s);
    return s;
  }

  cost::OverlapComm describe_comm(int rank, const Op& c) {
    if (c.kind == OpKind::P2P) return cost::describe_overlap_comm(c, comm_, {});
    if (c.comm >= 0) return cost::describe_overlap_comm(c, comm_, comm_geometry_[w_.bindings[rank].comms[c.comm]]);
    return cost::describe_overlap_comm(c, comm_, group_geometry(c.group, layout_.group_id(c.group, rank)));
  }

  // ---- collectives
  workload::GroupGeometry explicit_geometry(const std::vector<int>& members) const {
    workload::GroupGeometry geo;
    geo.ranks = static_cast<int>(members.size());
    std::unordered_map<int, int> per_node;
    for (int m : members) geo.ranks_per_node = std::max(geo.ranks_per_node, ++per_node[layout_.node_of(m)]);
    geo.nodes = std::max<int>(1, static_cast<int>(per_node.size()));
    return geo;
  }

  void arrive(int rank, int stream, const Op& op, int64_t t) {
    const bool explicit_group = op.comm >= 0;
    const int g = explicit_group ? static_cast<int>(kExplicitGroup) : static_cast<int>(op.group);
    const int gid = explicit_group ? w_.bindings[rank].comms[op.comm] : layout_.group_id(op.group, rank);
    PendingCollective& pc = explicit_group ? comm_pending_[gid] : pending_[g][gid];
    ++pc.arrived;
    pc.last_arrival = std::max(pc.last_arrival, t);
    const int needed = explicit_group ? comm_geometry_[gid].ranks : arrivals_[g][gid];
    if (static_cast<int>(pc.arrived) < needed) return;
    const int size = explicit_group ? comm_geometry_[gid].ranks : layout_.group_size(op.group);
    const int64_t begin = pc.last_arrival;
    pc = PendingCollective{};
    // One queue entry for the whole group (members end together): fewer heap operations.
    uint32_t slot;
    if (!free_done_.empty()) {
      slot = free_done_.back();
      free_done_.pop_back();
    } else {
      slot = static_cast<uint32_t>(done_.size());
      done_.emplace_back();
    }
    done_[slot] = CollectiveDone{static_cast<GroupKind>(g), static_cast<uint8_t>(stream), gid, begin};
    if (op.duration_ns > 0) {  // a traced collective of unknown size keeps its measured time
      queue_.push(begin + op.duration_ns, static_cast<int>(slot), kCollectiveDone);
      return;
    }
    if (network_) {
      members_.resize(size);
      for (int i = 0; i < size; ++i) members_[i] = member(static_cast<GroupKind>(g), gid, i);
      network_->start_collective(slot, op.coll, op.bytes, members_, begin);
      return;
    }
    queue_.push(begin + collective_ns(op, g, gid), static_cast<int>(slot), kCollectiveDone);
  }

  RankState& state(int rank) { return ranks_[static_cast<size_t>(slot_[rank])]; }
  const RankState& state(int rank) const { return ranks_[static_cast<size_t>(slot_[rank])]; }

  int member(GroupKind g, int gid, int i) const {
    return g == kExplicitGroup ? w_.communicators[gid][i] : layout_.member(g, gid, i);
  }

  // Completions the network reports at t: collectives end on all members, transfers on both sides.
  void network_done(int64_t t) {
    net_done_.clear();
    network_->advance(t, net_done_);
    for (uint64_t tag : net_done_) {
      if (!(tag & kTransferTag)) {
        finish_collective(static_cast<int>(tag), t);
        continue;
      }
      const uint32_t slot = static_cast<uint32_t>(tag & ~kTransferTag);
      const PendingTransfer tr = transfers_[slot];
      free_transfers_.push_back(slot);
      carried(tr.src, tr.dst, tr.bytes, tr.begin, t, tr.src_stream, tr.dst_stream);
    }
  }

  void finish_collective(int slot, int64_t t) {
    const CollectiveDone d = done_[slot];
    free_done_.push_back(static_cast<uint32_t>(slot));
    auto end_on = [&](int m) {
      state(m).s[d.stream].begin = d.begin;
      ++result_.events;
      on_end(m, d.stream, t);
    };
    if (d.group != kExplicitGroup && sym_.mirrored()) {
      for (int m : simulated_members(d.group, d.gid)) end_on(m);
      return;
    }
    const int size = d.group == kExplicitGroup ? comm_geometry_[d.gid].ranks : layout_.group_size(d.group);
    for (int i = 0; i < size; ++i) {
      const int m = member(d.group, d.gid, i);
      if (sym_.rep[m] == m) end_on(m);  // mirrored: its representative ends it
    }
  }

  // A group's simulated members in member order, walked once: with mirrored ranks a data-parallel group of a large
  // job holds thousands of ranks and a few representatives.
  const std::vector<int>& simulated_members(GroupKind kind, int gid) {
    std::vector<int>& ms = simulated_members_[static_cast<int>(kind)][gid];
    if (ms.empty()) {
      const int size = layout_.group_size(kind);
      for (int i = 0; i < size; ++i) {
        const int m = layout_.member(kind, gid, i);
        if (sym_.rep[m] == m) ms.push_back(m);
      }
    }
    return ms;
  }

  // A group's geometry, walked once (a data-parallel group of a large job holds thousands of ranks).
  const workload::GroupGeometry& group_geometry(workload::GroupKind kind, int gid) {
    workload::GroupGeometry& geo = geometry_[static_cast<int>(kind)][gid];
    if (geo.ranks <= 1) geo = layout_.geometry(kind, gid);
    return geo;
  }

  int64_t collective_ns(const Op& op, int g, int gid) {
    const bool explicit_group = g == static_cast<int>(kExplicitGroup);
    const workload::GroupGeometry& geo = explicit_group ? comm_geometry_[gid] : group_geometry(op.group, gid);
    const CollKey key{op.bytes, static_cast<int>(op.coll), geo.ranks, geo.nodes, geo.ranks_per_node};
    auto it = coll_cache_.find(key);
    if (it != coll_cache_.end()) return it->second;
    const int64_t ns = std::max<int64_t>(0, comm_.collective_ns(op.coll, op.bytes, geo));
    coll_cache_.emplace(key, ns);
    return ns;
  }

  // ---- point-to-point
  void post_p2p(int rank, int stream, const Op& op, int64_t t) {
    RankState& rs = state(rank);
    const int slot = p2p_slot(stream);
    if (op.part_count > 0) {  // trace-driven: explicit peers
      const Program& p = *prog_[rank];
      const workload::RankBinding& b = w_.bindings[rank];
      rs.p2p_remaining[slot] = op.part_count;
      rs.p2p_end[slot] = t;
      for (uint32_t i = op.part_begin; i < op.part_begin + op.part_count; ++i) {
        const workload::P2PPart& part = p.p2p_parts[i];
        const int peer = b.peers[part.peer];
        if (part.send) pair_transfer(rank, peer, true, part.bytes, t, p.eager_sends);
        else pair_transfer(peer, rank, false, part.bytes, t, false);
      }
      return;
    }
    rs.p2p_remaining[slot] = (op.send_next > 0) + (op.send_prev > 0) + (op.recv_prev > 0) + (op.recv_next > 0);
    rs.p2p_end[slot] = t;
    const int next = layout_.next_stage_rank(rank), prev = layout_.prev_stage_rank(rank);
    // Transfers that complete right away would finish this op before all are posted; count first.
    if (op.send_next) transfer(fwd_[rank], true, rank, next, op.send_next, t, stream);
    if (op.recv_prev) transfer(fwd_[prev], false, prev, rank, op.recv_prev, t, stream);
    if (op.send_prev) transfer(bwd_[rank], true, rank, prev, op.send_prev, t, stream);
    if (op.recv_next) transfer(bwd_[next], false, next, rank, op.recv_next, t, stream);
  }

  // Posts one side of a transfer src->dst on `ch` from pipeline stream `stream`; when the other side is already
  // there, carries it.
  void transfer(Channel& ch, bool is_send, int src, int dst, uint64_t bytes, int64_t t, int stream) {
    if (!ch.pending) {
      ch = Channel{true, is_send, static_cast<uint8_t>(stream), t, bytes};
      return;
    }
    if (ch.is_send == is_send) {
      throw std::runtime_error("engine: two unmatched " + std::string(is_send ? "sends" : "receives") +
                               " between ranks " + std::to_string(src) + " and " + std::to_string(dst));
    }
    if (ch.bytes != bytes) {
      throw std::runtime_error("engine: send/recv size mismatch between ranks " + std::to_string(src) + " and " +
                               std::to_string(dst));
    }
    const int64_t begin = std::max(ch.t, t);
    ch.pending = false;
    const int src_stream = is_send ? stream : ch.stream, dst_stream = is_send ? ch.stream : stream;
    start_transfer(src, dst, bytes, begin, src_stream, dst_stream);
  }

  // Posts one side of a trace-driven transfer src->dst; matched in FIFO order with the other side's posts. An eager
  // send (Program::eager_sends) with no receive waiting moves its data at once, over the analytic point-to-point time
  // (the flow model's network is not used for it), and completes; the receive takes the data when it is posted.
  void pair_transfer(int src, int dst, bool is_send, uint64_t bytes, int64_t t, bool eager) {
    std::deque<PairSide>& q = pairs_[(static_cast<uint64_t>(src) << 32) | static_cast<uint32_t>(dst)];
    if (q.empty() || q.front().is_send == is_send) {
      PairSide side{is_send, t, bytes};
      if (is_send && eager) {
        const bool same_node = layout_.node_of(src) == layout_.node_of(dst);
        side.arrived = t + std::max<int64_t>(0, comm_.p2p_ns(bytes, same_node));
        transfer_done(src, kPpStream, t, side.arrived);
      }
      q.push_back(side);
      return;
    }
    const PairSide other = q.front();
    q.pop_front();
    if (other.bytes != bytes) {
      throw std::runtime_error("engine: send/recv size mismatch between ranks " + std::to_string(src) + " and " +
                               std::to_string(dst) + " (" + std::to_string(other.bytes) + " vs " +
                               std::to_string(bytes) + " bytes)");
    }
    if (other.arrived >= 0) {  // an eager send's data, waiting for this receive
      if (record_index_[src] >= 0 && record_index_[dst] >= 0) {
        result_.flows.push_back(Flow{src, dst, other.t, other.arrived, bytes, kPpStream, kPpStream});
      }
      transfer_done(dst, kPpStream, t, std::max(t, other.arrived));
      return;
    }
    start_transfer(src, dst, bytes, std::max(other.t, t), kPpStream, kPpStream);
  }

  void start_transfer(int src, int dst, uint64_t bytes, int64_t begin, int src_stream, int dst_stream) {
    if (network_) {
      uint32_t slot;
      if (!free_transfers_.empty()) {
        slot = free_transfers_.back();
        free_transfers_.pop_back();
      } else {
        slot = static_cast<uint32_t>(transfers_.size());
        transfers_.emplace_back();
      }
      transfers_[slot] = PendingTransfer{src, dst, begin, bytes, static_cast<uint8_t>(src_stream),
                                         static_cast<uint8_t>(dst_stream)};
      network_->start_p2p(kTransferTag | slot, src, dst, bytes, begin);
      return;
    }
    const bool same_node = layout_.node_of(src) == layout_.node_of(dst);
    carried(src, dst, bytes, begin, begin + std::max<int64_t>(0, comm_.p2p_ns(bytes, same_node)), src_stream,
            dst_stream);
  }

  void carried(int src, int dst, uint64_t bytes, int64_t begin, int64_t end, int src_stream, int dst_stream) {
    if (record_index_[src] >= 0 && record_index_[dst] >= 0) {
      result_.flows.push_back(Flow{src, dst, begin, end, bytes, src_stream, dst_stream});
    }
    transfer_done(src, src_stream, begin, end);
    transfer_done(dst, dst_stream, begin, end);
  }

  void transfer_done(int rank, int stream, int64_t begin, int64_t end) {
    RankState& rs = state(rank);
    const int slot = p2p_slot(stream);
    rs.s[stream].begin = std::max(rs.s[stream].begin, begin);
    rs.p2p_end[slot] = std::max(rs.p2p_end[slot], end);
    if (--rs.p2p_remaining[slot] == 0) push(rs.p2p_end[slot], rank, stream);
  }

  void note_memory(int rank, int64_t t) {
    const int ri = record_index_[rank];
    if (ri < 0) return;
    auto& mem = result_.recorded[ri].memory;
    if (!mem.empty() && mem.back().t_ns == t) mem.back().bytes = state(rank).mem;
    else mem.push_back({t, state(rank).mem});
  }

  void check_finished() const {
    for (int r : simulated_) {
      const Program& p = *prog_[r];
      for (int s = 0; s < kNumStreams; ++s) {
        const StreamState& ss = state(r).s[s];
        if (ss.busy || ss.next < p.stream_ops[s].size()) {
          const Op& op = p.ops[p.stream_ops[s][ss.busy ? ss.next - 1 : ss.next]];
          std::ostringstream msg;
          msg << "engine: deadlock: rank " << r << " stream " << workload::name_of(static_cast<Stream>(s))
              << (ss.busy ? " waits in " : " cannot start ") << p.name(op) << " (micro-batch " << op.microbatch
              << ", layer " << op.layer << ")";
          throw DeadlockError(msg.str());
        }
      }
    }
  }

  const workload::Workload& w_;
  const workload::RankLayout& layout_;
  const cost::CollectiveModel& comm_;
  ContendedNetwork* network_;
  const cost::OverlapModel* overlap_;
  std::vector<int> members_;
  std::vector<uint64_t> net_done_;
  std::vector<PendingTransfer> transfers_;
  std::vector<uint32_t> free_transfers_;
  std::vector<RankState> ranks_;  // per simulated rank (slot_)
  std::vector<int32_t> slot_;     // per rank: its index in ranks_ and progress_, -1 for a mirrored rank
  std::vector<const Program*> prog_;
  std::vector<double> slow_;
  std::vector<Channel> fwd_, bwd_;
  std::unordered_map<uint64_t, std::deque<PairSide>> pairs_;
  std::vector<PendingCollective> comm_pending_;
  std::vector<workload::GroupGeometry> comm_geometry_;
  std::vector<PendingCollective> pending_[kNumGroupKinds];
  std::vector<int> arrivals_[kNumGroupKinds];  // per group: the members a collective waits for
  RankSymmetry sym_;
  std::vector<int> simulated_;
  std::vector<workload::GroupGeometry> geometry_[kNumGroupKinds];
  std::vector<std::vector<int>> simulated_members_[kNumGroupKinds];  // with mirrored ranks (simulated_members)
  std::unordered_map<CollKey, int64_t, CollKeyHash> coll_cache_;
  EventQueue queue_;
  std::vector<CollectiveDone> done_;
  std::vector<uint32_t> free_done_;
  std::vector<int> record_index_;
  SimResult result_;
  bool host_ = false;  // some program carries the host issue model
  // Overlap model state, after the hot members (they are untouched without a model).
  double peak_flops_, hbm_Bps_;
  ProgressFn progress_fn_;
  int64_t total_ops_ = 0;
  uint64_t next_report_ = UINT64_MAX;  // events count of the next progress report (0 once there is a callback)
  std::vector<ComputeProgress> progress_;
  std::unordered_map<OverlapKey, double, OverlapKeyHash> slowdown_cache_;
  std::vector<cost::OverlapComm> overlap_comms_;
};

}  // namespace

SimResult simulate(const workload::Workload& w, const cost::CollectiveModel& comm, const EngineOptions& opt) {
  if (opt.overlap) return Engine<true>(w, comm, opt).run();
  return Engine<false>(w, comm, opt).run();
}

}  // namespace stepsim::sim
