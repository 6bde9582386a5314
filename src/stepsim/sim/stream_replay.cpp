#include "stepsim/sim/stream_replay.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "stepsim/cost/overlap/overlap_describe.hpp"

namespace stepsim::sim {

namespace {

constexpr double kReplayNs = 1e-9;

// When the ops `op` waits for have ended, and which of them ended last (the replay's blocker for it).
double waits_ready(const workload::Program& prog, const workload::Op& op, const StreamReplay& r, int& blocker) {
  double ready = 0;
  for (uint32_t k = 0; k < op.wait_count; ++k) {
    const workload::Wait& wt = prog.waits[op.wait_begin + k];
    if (wt.count == 0) continue;
    const auto& on = prog.stream_ops[static_cast<int>(wt.stream)];
    const uint32_t j = on[std::min<size_t>(wt.count, on.size()) - 1];
    if (r.end_s[j] > ready) ready = r.end_s[j], blocker = static_cast<int>(j);
  }
  return ready;
}

// One geometry per group kind (RankLayout::geometry walks the group's ranks; a ring-attention layer alone issues
// 3c - 1 CP exchanges).
class GeometryCache {
 public:
  explicit GeometryCache(const workload::RankLayout& layout) : layout_(layout) {}
  const workload::GroupGeometry& of(workload::GroupKind g) {
    auto& geo = cache_[static_cast<int>(g)];
    if (!geo) geo = layout_.geometry(g, 0);
    return *geo;
  }

 private:
  const workload::RankLayout& layout_;
  std::array<std::optional<workload::GroupGeometry>, workload::kNumGroupKinds> cache_;
};

double op_seconds(const workload::Op& op, const cost::CollectiveModel& comm, GeometryCache& geometry) {
  if (op.kind == workload::OpKind::Compute) return static_cast<double>(op.duration_ns) * kReplayNs;
  if (op.kind == workload::OpKind::Collective)
    return static_cast<double>(comm.collective_ns(op.coll, op.bytes, geometry.of(op.group))) * kReplayNs;
  return 0;
}

// The collectives the replay has placed, for the overlap model: a compute-stream kernel that runs while some are in
// flight is slowed as the engine slows it.
class CollectivesInFlight {
 public:
  CollectivesInFlight(const ReplayOverlap& o) : o_(o) {}
  bool on() const { return o_.model != nullptr; }
  void add(double begin, double end, const cost::OverlapComm& c) {
    if (end > begin) placed_.push_back({begin, end, c});
  }
  // How long `op`, starting at t0, takes beside the collectives: piecewise at 1/(1 + s) of its speed, s changing
  // where a collective begins or ends.
  double duration(const workload::Op& op, double t0, double isolated) {
    std::erase_if(placed_, [&](const Placed& p) { return p.end <= t0; });  // compute-stream starts only grow
    if (placed_.empty() || !cost::slowed_by_communication(op)) return isolated;
    const cost::OverlapCompute c = cost::describe_overlap_compute(op, o_.peak_flops, o_.hbm_Bps);
    double t = t0, left = isolated;
    while (left > 0) {
      active_.clear();
      double next = std::numeric_limits<double>::infinity();
      for (const Placed& p : placed_) {
        if (p.begin <= t && t < p.end) {
          if (active_.size() < kMaxComms) active_.push_back(p.comm);
          next = std::min(next, p.end);
        } else if (p.begin > t) {
          next = std::min(next, p.begin);
        }
      }
      const double s = active_.empty() ? 0.0 : std::max(0.0, o_.model->compute_slowdown(c, active_));
      if (t + left * (1 + s) <= next) return t + left * (1 + s) - t0;
      left -= (next - t) / (1 + s);
      t = next;
    }
    return t - t0;
  }

 private:
  static constexpr size_t kMaxComms = 6;  // as many as the engine describes to the model
  struct Placed {
    double begin, end;
    cost::OverlapComm comm;
  };
  ReplayOverlap o_;
  std::vector<Placed> placed_;
  std::vector<cost::OverlapComm> active_;
};

}  // namespace

StreamReplay replay_streams(const workload::Workload& w, const cost::CollectiveModel& comm, bool host,
                            const ReplayOverlap& overlap) {
  const workload::Program& prog = w.programs[0];
  const size_t n = prog.ops.size();
  StreamReplay r{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n),
                 std::vector<int>(n, kStreamBlocker)};
  GeometryCache geometry(w.layout);
  CollectivesInFlight in_flight(overlap);
  std::array<double, workload::kNumStreams> stream_free{};
  host = host && !prog.host_prefix.empty();
  double host_s = 0;  // when the host has issued the ops so far
  for (size_t i = 0; i < n; ++i) {
    const workload::Op& op = prog.ops[i];
    const double ready = waits_ready(prog, op, r, r.blocker[i]);
    const double dur = op_seconds(op, comm, geometry);
    const int st = static_cast<int>(op.stream);
    r.prev_free_s[i] = stream_free[st];
    r.start_s[i] = std::max(stream_free[st], ready);
    if (host) {
      host_s += static_cast<double>(op.host_ns) * kReplayNs;
      if (host_s > r.start_s[i]) {
        r.start_s[i] = host_s;
        r.blocker[i] = kHostBlocker;
      }
    }
    const bool slowed = in_flight.on() && op.kind == workload::OpKind::Compute && op.stream == workload::Stream::Compute;
    r.end_s[i] = r.start_s[i] + (slowed ? in_flight.duration(op, r.start_s[i], dur) : dur);
    if (in_flight.on() && op.kind == workload::OpKind::Collective)
      in_flight.add(r.start_s[i], r.end_s[i], cost::describe_overlap_comm(op, comm, geometry.of(op.group)));
    stream_free[st] = r.end_s[i];
    if (host && op.host_sync) host_s = std::max(host_s, r.end_s[i]);
  }
  return r;
}

}  // namespace stepsim::sim
