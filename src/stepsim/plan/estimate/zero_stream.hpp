#pragma once
// ZeRO-2/3: a stage's data-parallel stream replayed against its compute, pass by pass. Stage 3 gathers each unit's
// parameters before it computes: with prefetch unit i + 1's gather is issued when unit i starts (units 0 and 1 at
// the pass start), else when the unit before has finished; after each unit's backward its gradients are
// reduce-scattered (stages 2 and 3), all on one FIFO stream, so a backlog of reduce-scatters delays the next pass's
// gathers. The host issues the units' ops on a timeline of its own that never waits for the GPU (no syncs in a dense
// model): a unit ends no earlier than its host has issued it, so host-bound passes and the GPU's waits for gathers
// overlap as they do in the engine.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace stepsim::plan::estimate {

// What a kernel of `isolated` seconds lasts when the data-parallel stream stays busy for `busy` seconds from its start
// and slows it by `slowdown` meanwhile (sim/stream_replay.cpp's rule for one collective in flight).
inline double beside_stream(double isolated, double busy, double slowdown) {
  if (slowdown <= 0 || busy <= 0) return isolated;
  const double overlapped = std::min(busy, isolated * (1 + slowdown));
  return isolated + overlapped * slowdown / (1 + slowdown);
}

struct ZeroUnits {
  // Per unit, in the pass's order: the GPU's time (kernels and communication waits), the host's time to issue it
  // (0 where the GPU's time already holds the host's waits: MoE), the gather before it and the reduce-scatter after.
  std::vector<double> compute, issue, gather, scatter;
};

// What a replay leaves: the time the compute stood idle waiting for a gather, how long the stream runs on after the
// last pass's compute, and when that is.
struct ZeroReplay {
  double exposed_s = 0, trailing_s = 0, end_s = 0;  // end_s: the last pass's end
  double first_pass_s = 0, last_pass_s = 0;          // the waits for gathers in the first and in the last pass
  double stream_s = 0;  // when the stream would end if it never idled after the first reduce-scatter
};

// Inline (defined in the class): the replay calls pass() thousands of times per plan.
class ZeroStream {
 public:
  // `slowdown`: the overlap model's, for a unit's kernels while the stream is busy (DpStep::slowdown); the time they
  // lose counts with the waits for gathers (exposed_s).
  explicit ZeroStream(bool prefetch, double slowdown = 0) : prefetch_(prefetch), slowdown_(slowdown) {}
  // `pipeline_wait`: how long the pass waits for its input from the neighbouring stage (the fill and drain of the
  // pipeline): the gathers issued at the pass's start run meanwhile, and only what they take beyond it is exposed.
  void pass(const ZeroUnits& u, bool backward, double pipeline_wait = 0) {
    const size_t n = u.compute.size();
    gathered_.assign(n, -1);
    const double idle_before = idle_;
    for (size_t i = 0; i < n; ++i) {
      issue(u, i);
      if (prefetch_) issue(u, i + 1);
      if (i == 0) comp_ += pipeline_wait;
      const double start = std::max(comp_, gathered_[i]);
      idle_ += start - comp_;
      // The host issues on without waiting for the GPU (no syncs): a unit ends no earlier than its last op is issued.
      host_ += u.issue[i];
      const double run = slowdown_ > 0 ? beside_stream(u.compute[i], dp_ - start, slowdown_) : u.compute[i];
      idle_ += run - u.compute[i];
      comp_ = std::max(start + run, host_);
      if (backward && u.scatter[i] > 0) scatter(u.scatter[i]);
    }
    if (passes_++ == 0) first_idle_ = idle_ - idle_before;
    last_idle_ = idle_ - idle_before;
  }
  ZeroReplay result() const {
    return {idle_, std::max(0.0, dp_ - comp_), comp_, first_idle_, last_idle_, std::max(0.0, first_scatter_) + work_};
  }

  // The replay's state, and `times` more repetitions of a stretch that moved it by `d` (the steady state's shortcut).
  struct State {
    double dp = 0, comp = 0, idle = 0, host = 0, work = 0;
  };
  State state() const { return {dp_, comp_, idle_, host_, work_}; }
  void repeat(const State& d, double times) {
    dp_ += d.dp * times;
    comp_ += d.comp * times;
    idle_ += d.idle * times;
    host_ += d.host * times;
    work_ += d.work * times;
  }

 private:
  // Unit k's gather issued (once per pass) behind what the stream still has.
  void issue(const ZeroUnits& u, size_t k) {
    if (k >= u.compute.size() || gathered_[k] >= 0) return;
    if (u.gather[k] <= 0) {
      gathered_[k] = 0;
      return;
    }
    dp_ = std::max(dp_, comp_) + u.gather[k];
    if (first_scatter_ >= 0) work_ += u.gather[k];
    gathered_[k] = dp_;
  }
  // A unit's gradients reduce-scattered once its backward has run, behind what the stream still has.
  void scatter(double seconds) {
    if (first_scatter_ < 0) first_scatter_ = std::max(dp_, comp_);
    dp_ = std::max(dp_, comp_) + seconds;
    work_ += seconds;
  }

  bool prefetch_;
  double slowdown_;
  double dp_ = 0, comp_ = 0, idle_ = 0, host_ = 0;
  double first_scatter_ = -1, work_ = 0;  // when the first reduce-scatter starts; the stream's collectives in all
  double first_idle_ = 0, last_idle_ = 0;  // the waits for gathers in the first and in the last pass
  int passes_ = 0;
  std::vector<double> gathered_;
};

}  // namespace stepsim::plan::estimate
