#include "stepsim/ingest/trace/tracer_workload.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace stepsim::trace {

using workload::CollType;
using workload::OpKind;

namespace {

struct CommRecord {
  std::string op;
  std::vector<int> group_ranks;
  uint64_t bytes = 0;
  bool async = false;
  int peer = -1;
  int batch = -1;
};

struct ProfiledOp {
  std::string name;
  bool top = false;
  int comm_index = -1;  // stepsim.comm#<index> marker
  int64_t start = 0, end = 0, kernel_ns = 0, memory = 0;
};

int64_t us_to_ns(double us) { return std::llround(us * 1000.0); }

// A time in microseconds of the profiled run: non-negative, and below 10^12 us (11.6 days) so that nanoseconds and
// their sums stay far inside int64.
int64_t field_ns(const JsonField& f) {
  const double us = f.number_or(0, 0);
  if (!(us < 1e12)) f.fail("must be below 10^12 microseconds");
  return us_to_ns(us);
}

bool is_p2p(const std::string& op) { return op == "send" || op == "recv" || op == "isend" || op == "irecv"; }

// torch.distributed call -> the collective whose time stands for it. gather/scatter move one rank's share to or
// from a root like reduce/broadcast; barrier is NCCL's one-element all-reduce.
std::optional<CollType> coll_of(const std::string& op) {
  static const std::map<std::string, CollType> k{
      {"all_reduce", CollType::AllReduce},        {"all_reduce_coalesced", CollType::AllReduce},
      {"barrier", CollType::AllReduce},           {"monitored_barrier", CollType::AllReduce},
      {"broadcast", CollType::Broadcast},         {"broadcast_object_list", CollType::Broadcast},
      {"scatter", CollType::Broadcast},           {"reduce", CollType::Reduce},
      {"gather", CollType::Reduce},               {"all_gather", CollType::AllGather},
      {"all_gather_into_tensor", CollType::AllGather}, {"_all_gather_base", CollType::AllGather},
      {"all_gather_object", CollType::AllGather}, {"reduce_scatter", CollType::ReduceScatter},
      {"reduce_scatter_tensor", CollType::ReduceScatter}, {"_reduce_scatter_base", CollType::ReduceScatter},
      {"all_to_all", CollType::AllToAll},         {"all_to_all_single", CollType::AllToAll}};
  auto it = k.find(op);
  if (it == k.end()) return std::nullopt;
  return it->second;
}

std::vector<CommRecord> read_comm(const JsonField& comm) {
  std::vector<CommRecord> out;
  for (size_t i = 0; i < comm.size(); ++i) {
    const JsonField c = comm.at(i);
    if (c["index"].integer(0) != static_cast<int64_t>(i)) c["index"].fail("records must be in index order 0, 1, ...");
    CommRecord r;
    r.op = c["op"].string();
    for (int64_t g : c["group_ranks"].int_list_or_empty(0)) r.group_ranks.push_back(static_cast<int>(g));
    std::sort(r.group_ranks.begin(), r.group_ranks.end());
    r.bytes = c["bytes"].message_bytes();
    r.async = c["async"].boolean_or(false);
    r.batch = static_cast<int>(c["batch"].integer_or(-1, 0));
    if (is_p2p(r.op)) {
      if (c["peer"].absent() || c["peer"].is_null()) c["peer"].fail("a receive from any source cannot be replayed");
      r.peer = static_cast<int>(c["peer"].integer(0));
    } else if (!coll_of(r.op)) {
      c["op"].fail("unknown torch.distributed call '" + r.op + "'");
    }
    out.push_back(std::move(r));
  }
  return out;
}

// Calls -> ops: the parts of one batch_isend_irecv, and runs of unbatched isend/irecv (in flight together until
// waited on), form one P2P op. Returns each record's op index.
std::vector<int> group_calls(const std::vector<CommRecord>& recs, std::vector<TracedOp>& comm_ops) {
  std::vector<int> op_of(recs.size(), -1);
  for (size_t i = 0; i < recs.size(); ++i) {
    const CommRecord& r = recs[i];
    const bool joins = i > 0 && is_p2p(r.op) && is_p2p(recs[i - 1].op) &&
                       ((r.batch >= 0 && r.batch == recs[i - 1].batch) ||
                        (r.batch < 0 && recs[i - 1].batch < 0 && r.async && recs[i - 1].async));
    if (!joins) {
      TracedOp op;
      op.name = is_p2p(r.op) ? (r.batch >= 0 ? "batch_isend_irecv" : r.op) : r.op;
      if (is_p2p(r.op)) {
        op.kind = OpKind::P2P;
      } else {
        op.kind = OpKind::Collective;
        op.coll = *coll_of(r.op);
        op.bytes = r.bytes;
        op.group_ranks = r.group_ranks;
        op.blocking = !r.async;
      }
      comm_ops.push_back(std::move(op));
    }
    TracedOp& op = comm_ops.back();
    if (is_p2p(r.op)) {
      const bool send = r.op == "send" || r.op == "isend";
      (send ? op.sends : op.recvs).push_back({r.peer, r.bytes});
    }
    op_of[i] = static_cast<int>(comm_ops.size()) - 1;
  }
  return op_of;
}

}  // namespace

TracedRank parse_tracer_workload(const JsonField& root, const std::string& path) {
  TracedRank tr;
  tr.path = path;
  if (root["version"].integer(1) != 1) root["version"].fail("only version 1 is known");
  tr.rank = static_cast<int>(root["rank"].integer(0));
  tr.world_size = static_cast<int>(root["world_size"].integer(1));
  tr.explicit_deps = true;  // dependencies follow from the calls' semantics, below
  const std::string device = root["device"].string();
  const bool gpu = device.rfind("cuda", 0) == 0;

  const std::vector<CommRecord> recs = read_comm(root["comm"]);
  std::vector<TracedOp> comm_ops;
  const std::vector<int> op_of = group_calls(recs, comm_ops);

  const JsonField jops = root["ops"];
  if (jops.absent()) {  // --no-profile: communication only
    tr.comm_only = true;
    return tr;
  }
  if (jops.size() == 0) jops.fail("is empty: no profiled ops");
  std::vector<ProfiledOp> ops;
  std::map<int64_t, size_t> by_id;
  for (size_t i = 0; i < jops.size(); ++i) {
    const JsonField o = jops.at(i);
    ProfiledOp p;
    p.name = o["name"].string();
    p.top = o["parent"].absent() || o["parent"].is_null();
    p.comm_index = static_cast<int>(o["comm_index"].integer_or(-1, 0));
    if (p.comm_index >= static_cast<int>(recs.size())) o["comm_index"].fail("names no record of `comm`");
    p.start = field_ns(o["start_us"]);
    p.end = p.start + field_ns(o["dur_us"]);
    const JsonField ks = o["kernels"];
    // Saturated: a hostile file's many huge kernels must not overflow the sum.
    for (size_t k = 0; !ks.absent() && k < ks.size(); ++k)
      p.kernel_ns = std::min<int64_t>(p.kernel_ns + field_ns(ks.at(k)["dur_us"]), int64_t{1} << 60);
    p.memory = o[gpu ? "device_memory_bytes" : "cpu_memory_bytes"].integer_or(0, INT64_MIN);
    ops.push_back(std::move(p));
  }
  std::vector<const ProfiledOp*> tops, markers;
  for (const ProfiledOp& p : ops) {
    if (p.comm_index >= 0) markers.push_back(&p);
    else if (p.top) tops.push_back(&p);
  }
  auto by_start = [](const ProfiledOp* a, const ProfiledOp* b) { return a->start < b->start; };
  std::stable_sort(tops.begin(), tops.end(), by_start);
  std::stable_sort(markers.begin(), markers.end(), by_start);
  // Kernel time of every op by start, to charge a GPU run's pieces with the kernels their ops launched.
  std::vector<std::pair<int64_t, int64_t>> kernel_time;
  for (const ProfiledOp& p : ops) {
    if (p.comm_index < 0 && p.kernel_ns > 0) kernel_time.push_back({p.start, p.kernel_ns});
  }
  std::sort(kernel_time.begin(), kernel_time.end());
  auto kernels_in = [&](int64_t b, int64_t e) {
    int64_t sum = 0;
    for (auto it = std::lower_bound(kernel_time.begin(), kernel_time.end(), std::make_pair(b, INT64_MIN));
         it != kernel_time.end() && it->first < e; ++it) {
      sum += it->second;
    }
    return sum;
  };

  int64_t cursor = tops.empty() ? 0 : tops.front()->start;
  const int64_t origin = cursor;
  int last_compute = -1, last_blocking_comm = -1;
  std::vector<bool> comm_emitted(comm_ops.size(), false);
  auto emit_compute = [&](const std::string& name, int64_t b, int64_t e, int64_t memory, bool first_piece) {
    if (b > cursor) {  // the CPU between top-level ops: Python, the data loader, launch latency
      TracedOp gap;
      gap.name = "host gap";
      gap.category = workload::ComputeCategory::Host;
      gap.duration_ns = b - cursor;
      gap.start_ns = cursor - origin;
      if (last_blocking_comm >= 0) gap.after.push_back(last_blocking_comm);
      tr.ops.push_back(std::move(gap));
      last_compute = static_cast<int>(tr.ops.size()) - 1;
    }
    cursor = std::max(cursor, e);
    const int64_t d = gpu ? kernels_in(b, e) : e - b;
    if (d <= 0 && !(first_piece && memory != 0)) return;
    TracedOp c;
    c.name = name;
    c.duration_ns = std::max<int64_t>(0, d);
    c.start_ns = b - origin;
    if (first_piece) (memory >= 0 ? c.mem_alloc_bytes : c.mem_free_bytes) = memory >= 0 ? memory : -memory;
    if (last_blocking_comm >= 0) c.after.push_back(last_blocking_comm);
    tr.ops.push_back(std::move(c));
    last_compute = static_cast<int>(tr.ops.size()) - 1;
  };
  auto emit_comm = [&](const ProfiledOp& marker) {
    const int k = op_of[marker.comm_index];
    if (comm_emitted[k]) return;
    comm_emitted[k] = true;
    TracedOp op = comm_ops[k];
    op.start_ns = marker.start - origin;
    // A call made at top level counts in the tracer's running sum of top-level allocations like any op.
    if (marker.top) (marker.memory >= 0 ? op.mem_alloc_bytes : op.mem_free_bytes) = std::abs(marker.memory);
    if (last_compute >= 0) op.after.push_back(last_compute);  // issued after the compute before it
    tr.ops.push_back(std::move(op));
    if (tr.ops.back().blocking) last_blocking_comm = static_cast<int>(tr.ops.size()) - 1;
    cursor = std::max(cursor, marker.end);
  };
  size_t m = 0;
  for (const ProfiledOp* top : tops) {
    int64_t b = std::max(top->start, cursor);
    const int64_t e = top->end;
    bool first = true;
    while (m < markers.size() && markers[m]->start < e) {
      if (markers[m]->start >= b) {
        emit_compute(top->name, b, markers[m]->start, top->memory, first);
        first = false;
      }
      emit_comm(*markers[m]);
      b = std::max(b, markers[m]->end);
      ++m;
    }
    if (e > b || first) emit_compute(top->name, std::min(b, e), e, top->memory, first);
  }
  for (; m < markers.size(); ++m) emit_comm(*markers[m]);
  // The measured step: the profiled timeline, first top-level op to the last op's end (wall_time_s would add the
  // tracer's own start-up).
  int64_t last_end = origin;
  for (const ProfiledOp& p : ops) last_end = std::max(last_end, p.end);
  if (last_end > origin) tr.measured_step_s = static_cast<double>(last_end - origin) * 1e-9;
  for (size_t k = 0; k < comm_ops.size(); ++k) {
    if (!comm_emitted[k]) root["ops"].fail("no stepsim.comm#" + std::to_string(k) + " op places communication call " + std::to_string(k));
  }
  return tr;
}

}  // namespace stepsim::trace
