#include "stepsim/report/breakdown.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace stepsim::report {

using workload::GroupKind;
using workload::OpKind;

const char* comm_kind_name(int k) {
  static const char* const n[] = {"tp", "cp", "ep", "pp", "dp", "world"};
  return n[k];
}

CommKind comm_kind_of(GroupKind g) {
  switch (g) {
    case GroupKind::Tp:
    case GroupKind::Etp: return kTp;
    case GroupKind::Cp:
    case GroupKind::HcpA2a:
    case GroupKind::HcpRing: return kCp;
    case GroupKind::Ep: return kEp;
    case GroupKind::Pp: return kPp;
    case GroupKind::World: return kWorld;
    case GroupKind::Dp:
    case GroupKind::Edp:
    case GroupKind::kCount: break;
  }
  return kDp;
}

double Breakdown::total_s() const {
  double t = compute_s + pipeline_bubble_s + optimizer_s + overlap_slowdown_s + host_gap_s + offload_s;
  for (double x : exposed_comm_s) t += x;
  return t;
}

Breakdown breakdown(const workload::Program& prog, const sim::RankTimeline& tl, int64_t step_ns) {
  // Sweep over interval boundaries with a count of active compute, optimizer and per-kind comm ops.
  constexpr int kCompute = 0, kOptimizer = 1, kHost = 2, kOffload = 3, kComm0 = 4;
  struct Edge {
    int64_t t;
    int cls;
    int delta;
  };
  std::vector<Edge> edges;
  edges.reserve(tl.ops.size() * 2);
  int64_t overlap_ns[2] = {};  // slowed compute, slowed optimizer kernels (inside their own intervals)
  for (const sim::OpRecord& r : tl.ops) {
    const workload::Op& op = prog.ops[r.op];
    int cls;
    if (op.kind == OpKind::Compute && op.category == workload::ComputeCategory::Host) cls = kHost;
    else if (op.kind == OpKind::Compute && op.category == workload::ComputeCategory::Offload &&
             op.phase != workload::Phase::Optimizer)
      cls = kOffload;
    else if (op.kind == OpKind::Compute) cls = op.phase == workload::Phase::Optimizer ? kOptimizer : kCompute;
    else cls = kComm0 + comm_kind_of(op.group);
    const int64_t b = std::clamp<int64_t>(r.begin_ns, 0, step_ns), e = std::clamp<int64_t>(r.end_ns, 0, step_ns);
    if (e <= b) continue;
    if (r.overlap_ns > 0 && cls <= kOptimizer) overlap_ns[cls] += std::min(r.overlap_ns, e - b);
    edges.push_back({b, cls, +1});
    edges.push_back({e, cls, -1});
    // Host issue model: the GPU could have started this op but the host had not issued it yet.
    if (r.host_wait_ns > 0) {
      const int64_t hb = std::clamp<int64_t>(r.post_ns - r.host_wait_ns, 0, step_ns), he = std::clamp<int64_t>(r.post_ns, 0, step_ns);
      if (he > hb) {
        edges.push_back({hb, kHost, +1});
        edges.push_back({he, kHost, -1});
      }
    }
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
  int active[kComm0 + kNumCommKinds] = {};
  std::array<int64_t, kComm0 + kNumCommKinds + 1> ns{};  // last slot: idle
  int64_t t = 0;
  auto account = [&](int64_t until) {
    if (until <= t) return;
    int cls = kComm0 + kNumCommKinds;
    if (active[kCompute]) cls = kCompute;
    else if (active[kOptimizer]) cls = kOptimizer;
    else if (active[kHost]) cls = kHost;
    else {
      for (int k = 0; k < kNumCommKinds; ++k) {
        if (active[kComm0 + k]) {
          cls = kComm0 + k;
          break;
        }
      }
      if (cls == kComm0 + kNumCommKinds && active[kOffload]) cls = kOffload;
    }
    ns[cls] += until - t;
    t = until;
  };
  for (const Edge& e : edges) {
    account(e.t);
    active[e.cls] += e.delta;
  }
  account(step_ns);
  Breakdown b;
  // A compute-stream kernel is the only compute of its interval on that stream, so its lost time lies inside the
  // time counted for its class.
  b.compute_s = static_cast<double>(ns[kCompute] - overlap_ns[kCompute]) * 1e-9;
  b.optimizer_s = static_cast<double>(ns[kOptimizer] - overlap_ns[kOptimizer]) * 1e-9;
  b.overlap_slowdown_s = static_cast<double>(overlap_ns[kCompute] + overlap_ns[kOptimizer]) * 1e-9;
  b.host_gap_s = static_cast<double>(ns[kHost]) * 1e-9;
  b.offload_s = static_cast<double>(ns[kOffload]) * 1e-9;
  for (int k = 0; k < kNumCommKinds; ++k) b.exposed_comm_s[k] = static_cast<double>(ns[kComm0 + k]) * 1e-9;
  b.pipeline_bubble_s = static_cast<double>(ns[kComm0 + kNumCommKinds]) * 1e-9;
  return b;
}

CommBytes comm_bytes(const workload::Workload& w, int rank) {
  CommBytes c;
  for (const workload::Op& op : w.program_of_rank(rank).ops) {
    if (op.kind == OpKind::Collective) {
      const int k = comm_kind_of(op.group);
      c.message[k] += op.bytes;
      c.volume[k] += static_cast<uint64_t>(std::llround(static_cast<double>(op.bytes) *
                                                        workload::bus_factor(op.coll, w.group_size_of(rank, op))));
      ++c.calls[k];
    } else if (op.kind == OpKind::P2P) {
      const uint64_t sent = op.send_prev + op.send_next;  // receives count 0
      c.message[kPp] += sent;
      c.volume[kPp] += sent;
      ++c.calls[kPp];
    }
  }
  return c;
}

}  // namespace stepsim::report
