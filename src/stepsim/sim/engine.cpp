#include "stepsim/sim/engine.hpp"

#include "stepsim/sim/contended_network.hpp"
#include "stepsim/sim/event_queue.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
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
};

struct RankState {
  StreamState s[kNumStreams];
  int64_t mem = 0, peak = 0, finish = 0;
  int32_t p2p_remaining = 0;
  int64_t p2p_end = 0;
};

// One direction of a pipeline link: sends of `from` to its next (or previous) stage matched in FIFO order
// with that peer's receives. Megatron's schedules never leave more than one side waiting.
struct Channel {
  bool pending = false;
  bool is_send = false;
  int64_t t = 0;
  uint64_t bytes = 0;
};

// A collective whose end is queued: its members are completed together when it pops.
struct CollectiveDone {
  GroupKind group;
  uint8_t stream;
  int gid;
  int64_t begin;
};
constexpr int kCollectiveDone = 7;  // queue "stream" tag of a CollectiveDone entry (streams are 0..6)
static_assert(kNumStreams <= kCollectiveDone);

// A matched send/recv carried by a ContendedNetwork, waiting for its completion.
struct PendingTransfer {
  int src, dst;
  int64_t begin;
  uint64_t bytes;
};
constexpr uint64_t kTransferTag = 1ull << 63;  // network tags: collective slot, or this bit | transfer slot

struct PendingCollective {
  uint32_t arrived = 0;
  int64_t last_arrival = 0;
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

class Engine {
 public:
  Engine(const workload::Workload& w, const cost::CollectiveModel& comm, const EngineOptions& opt)
      : w_(w), layout_(w.layout), comm_(comm), network_(opt.network) {
    const int n = layout_.world();
    if (n > (1 << EventQueue::kRankBits)) throw std::runtime_error("engine: more ranks than the event queue holds");
    ranks_.resize(n);
    prog_.resize(n);
    slow_.assign(n, 1.0);
    for (const auto& [r, f] : w.job.cluster.slow_ranks) {
      if (r >= 0 && r < n) slow_[r] = f;
    }
    for (int r = 0; r < n; ++r) {
      prog_[r] = &w.program_of_rank(r);
      ranks_[r].mem = ranks_[r].peak = prog_[r]->static_memory.total();
    }
    fwd_.resize(n);
    bwd_.resize(n);
    for (int g = 0; g < kNumGroupKinds; ++g) {
      const auto kind = static_cast<GroupKind>(g);
      pending_[g].resize(layout_.num_groups(kind));
      geometry_[g].resize(layout_.num_groups(kind));
    }
    record_index_.assign(n, -1);
    for (int r : opt.record_ranks) {
      if (r < 0 || r >= n || record_index_[r] >= 0) continue;
      record_index_[r] = static_cast<int>(result_.recorded.size());
      result_.recorded.push_back(RankTimeline{r, {}, {}});
      result_.recorded.back().memory.push_back({0, ranks_[r].mem});
    }
  }

  SimResult run() {
    const auto t0 = std::chrono::steady_clock::now();
    const int n = layout_.world();
    for (int r = 0; r < n; ++r) try_start_all(r, 0);
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
      if (stream == kCollectiveDone) {
        finish_collective(EventQueue::rank_of(e), e.t);
      } else {
        ++result_.events;
        on_end(EventQueue::rank_of(e), stream, e.t);
      }
    }
    check_finished();
    result_.finish_ns.resize(n);
    result_.peak_bytes.resize(n);
    for (int r = 0; r < n; ++r) {
      result_.finish_ns[r] = ranks_[r].finish;
      result_.peak_bytes[r] = ranks_[r].peak;
      result_.step_ns = std::max(result_.step_ns, ranks_[r].finish);
    }
    result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::move(result_);
  }

 private:
  void push(int64_t t, int rank, int stream) { queue_.push(t, rank, stream); }

  const Op& current_op(int rank, int stream) const {
    const Program& p = *prog_[rank];
    return p.ops[p.stream_ops[stream][ranks_[rank].s[stream].next - 1]];
  }

  void on_end(int rank, int stream, int64_t t) {
    RankState& rs = ranks_[rank];
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
      result_.recorded[ri].ops.push_back(
          OpRecord{op_index, ss.post, ss.begin, t, op.kind == OpKind::Compute ? slow_[rank] : 1.0});
    }
    try_start_all(rank, t);
  }

  void try_start_all(int rank, int64_t t) {
    for (int s = 0; s < kNumStreams; ++s) try_start(rank, s, t);
  }

  void try_start(int rank, int stream, int64_t t) {
    RankState& rs = ranks_[rank];
    StreamState& ss = rs.s[stream];
    const Program& p = *prog_[rank];
    if (ss.busy || ss.next >= p.stream_ops[stream].size()) return;
    const uint32_t op_index = p.stream_ops[stream][ss.next];
    const Op& op = p.ops[op_index];
    for (uint32_t i = 0; i < op.wait_count; ++i) {
      const workload::Wait& w = p.waits[op.wait_begin + i];
      if (rs.s[static_cast<int>(w.stream)].done < w.count) return;
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
        push(t + d, rank, stream);
        break;
      }
      case OpKind::Collective: arrive(rank, stream, op, t); break;
      case OpKind::P2P: post_p2p(rank, op, t); break;
    }
  }

  // ---- collectives
  void arrive(int rank, int stream, const Op& op, int64_t t) {
    const int g = static_cast<int>(op.group);
    const int gid = layout_.group_id(op.group, rank);
    PendingCollective& pc = pending_[g][gid];
    ++pc.arrived;
    pc.last_arrival = std::max(pc.last_arrival, t);
    const int size = layout_.group_size(op.group);
    if (static_cast<int>(pc.arrived) < size) return;
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
    done_[slot] = CollectiveDone{op.group, static_cast<uint8_t>(stream), gid, begin};
    if (network_) {
      members_.resize(size);
      for (int i = 0; i < size; ++i) members_[i] = layout_.member(op.group, gid, i);
      network_->start_collective(slot, op.coll, op.bytes, members_, begin);
      return;
    }
    queue_.push(begin + collective_ns(op, g, gid), static_cast<int>(slot), kCollectiveDone);
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
      carried(tr.src, tr.dst, tr.bytes, tr.begin, t);
    }
  }

  void finish_collective(int slot, int64_t t) {
    const CollectiveDone d = done_[slot];
    free_done_.push_back(static_cast<uint32_t>(slot));
    const int size = layout_.group_size(d.group);
    for (int i = 0; i < size; ++i) {
      const int m = layout_.member(d.group, d.gid, i);
      ranks_[m].s[d.stream].begin = d.begin;
      ++result_.events;
      on_end(m, d.stream, t);
    }
  }

  int64_t collective_ns(const Op& op, int g, int gid) {
    cost::GroupGeometry& geo = geometry_[g][gid];
    if (geo.ranks <= 1) geo = layout_.geometry(op.group, gid);
    const CollKey key{op.bytes, static_cast<int>(op.coll), geo.ranks, geo.nodes, geo.ranks_per_node};
    auto it = coll_cache_.find(key);
    if (it != coll_cache_.end()) return it->second;
    const int64_t ns = std::max<int64_t>(0, comm_.collective_ns(op.coll, op.bytes, geo));
    coll_cache_.emplace(key, ns);
    return ns;
  }

  // ---- point-to-point
  void post_p2p(int rank, const Op& op, int64_t t) {
    RankState& rs = ranks_[rank];
    rs.p2p_remaining = (op.send_next > 0) + (op.send_prev > 0) + (op.recv_prev > 0) + (op.recv_next > 0);
    rs.p2p_end = t;
    const int next = layout_.next_stage_rank(rank), prev = layout_.prev_stage_rank(rank);
    // Transfers that complete right away would finish this op before all are posted; count first.
    if (op.send_next) transfer(fwd_[rank], true, rank, next, op.send_next, t);
    if (op.recv_prev) transfer(fwd_[prev], false, prev, rank, op.recv_prev, t);
    if (op.send_prev) transfer(bwd_[rank], true, rank, prev, op.send_prev, t);
    if (op.recv_next) transfer(bwd_[next], false, next, rank, op.recv_next, t);
  }

  // Posts one side of a transfer src->dst on `ch`; when the other side is already there, carries it.
  void transfer(Channel& ch, bool is_send, int src, int dst, uint64_t bytes, int64_t t) {
    if (!ch.pending) {
      ch = Channel{true, is_send, t, bytes};
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
    if (network_) {
      uint32_t slot;
      if (!free_transfers_.empty()) {
        slot = free_transfers_.back();
        free_transfers_.pop_back();
      } else {
        slot = static_cast<uint32_t>(transfers_.size());
        transfers_.emplace_back();
      }
      transfers_[slot] = PendingTransfer{src, dst, begin, bytes};
      network_->start_p2p(kTransferTag | slot, src, dst, bytes, begin);
      return;
    }
    const bool same_node = layout_.node_of(src) == layout_.node_of(dst);
    carried(src, dst, bytes, begin, begin + std::max<int64_t>(0, comm_.p2p_ns(bytes, same_node)));
  }

  void carried(int src, int dst, uint64_t bytes, int64_t begin, int64_t end) {
    if (record_index_[src] >= 0 && record_index_[dst] >= 0) {
      result_.flows.push_back(Flow{src, dst, begin, end, bytes});
    }
    transfer_done(src, begin, end);
    transfer_done(dst, begin, end);
  }

  void transfer_done(int rank, int64_t begin, int64_t end) {
    RankState& rs = ranks_[rank];
    const int pp = static_cast<int>(Stream::Pp);
    rs.s[pp].begin = std::max(rs.s[pp].begin, begin);
    rs.p2p_end = std::max(rs.p2p_end, end);
    if (--rs.p2p_remaining == 0) push(rs.p2p_end, rank, pp);
  }

  void note_memory(int rank, int64_t t) {
    const int ri = record_index_[rank];
    if (ri < 0) return;
    auto& mem = result_.recorded[ri].memory;
    if (!mem.empty() && mem.back().t_ns == t) mem.back().bytes = ranks_[rank].mem;
    else mem.push_back({t, ranks_[rank].mem});
  }

  void check_finished() const {
    for (int r = 0; r < layout_.world(); ++r) {
      const Program& p = *prog_[r];
      for (int s = 0; s < kNumStreams; ++s) {
        const StreamState& ss = ranks_[r].s[s];
        if (ss.busy || ss.next < p.stream_ops[s].size()) {
          const Op& op = p.ops[p.stream_ops[s][ss.busy ? ss.next - 1 : ss.next]];
          std::ostringstream msg;
          msg << "engine: deadlock: rank " << r << " stream " << workload::name_of(static_cast<Stream>(s))
              << (ss.busy ? " waits in " : " cannot start ") << p.name(op) << " (micro-batch " << op.microbatch
              << ", layer " << op.layer << ")";
          throw std::runtime_error(msg.str());
        }
      }
    }
  }

  const workload::Workload& w_;
  const workload::RankLayout& layout_;
  const cost::CollectiveModel& comm_;
  ContendedNetwork* network_;
  std::vector<int> members_;
  std::vector<uint64_t> net_done_;
  std::vector<PendingTransfer> transfers_;
  std::vector<uint32_t> free_transfers_;
  std::vector<RankState> ranks_;
  std::vector<const Program*> prog_;
  std::vector<double> slow_;
  std::vector<Channel> fwd_, bwd_;
  std::vector<PendingCollective> pending_[kNumGroupKinds];
  std::vector<cost::GroupGeometry> geometry_[kNumGroupKinds];
  std::unordered_map<CollKey, int64_t, CollKeyHash> coll_cache_;
  EventQueue queue_;
  std::vector<CollectiveDone> done_;
  std::vector<uint32_t> free_done_;
  std::vector<int> record_index_;
  SimResult result_;
};

}  // namespace

SimResult simulate(const workload::Workload& w, const cost::CollectiveModel& comm, const EngineOptions& opt) {
  Engine e(w, comm, opt);
  return e.run();
}

}  // namespace stepsim::sim
