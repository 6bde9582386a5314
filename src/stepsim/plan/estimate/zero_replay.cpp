#include "stepsim/plan/estimate/zero_replay.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/plan/estimate/zero_units.hpp"
#include "stepsim/workload/schedule.hpp"

namespace stepsim::plan::estimate {

namespace {

// The pipeline's waits in stage s's timeline, from the stages' chunk passes F_j and B_j (the stream's own waits left
// out): the forwards of the stages before it before its first forward; the stages after it forward and back, less its
// own warm-up forwards meanwhile, before its first backward; their forwards spread over its cool-down backwards; and
// in the steady state, a stage lighter than the slowest waits for its pace every pair. The steady-state lag is left
// out with host syncs: there the passes are the host's own, chained per layer.
struct PipelineWaits {
  double first = 0, backward = 0, cooldown = 0, lag = 0;
};
PipelineWaits pipeline_waits(const std::vector<StageCosts>& st, int s, int v, int warm, bool host_syncs,
                             double extra_first) {
  const int p = static_cast<int>(st.size());
  double before_f = 0, after_fb = 0, after_f = 0, pace = 0;
  for (int j = 0; j < p; ++j) {
    const double fj = st[j].f.total() / v, bj = st[j].b.total() / v;
    if (j < s) before_f += fj;
    if (j > s) after_fb += fj + bj, after_f += fj;
    pace = std::max(pace, fj + bj);
  }
  const double f_own = st[s].f.total() / v, b_own = st[s].b.total() / v;
  const int cooldown = std::max(1, warm);
  return {before_f + extra_first, std::max(0.0, after_fb - (p - 1 - s) * f_own), after_f / cooldown,
          host_syncs ? 0.0 : std::max(0.0, pace - f_own - b_own)};
}

// The stage's passes in Megatron's order (schedule.cpp): the warm-up forwards, then forward k + warm-up and backward
// k alternating, then the cool-down backwards; virtual micro-batch k runs chunk (k mod p v) / p forward, v - 1 minus
// that backward.
class StageSchedule {
 public:
  StageSchedule(const StageUnits& units, int p, int v, int64_t m, int warm)
      : units_(units), p_(p), v_(v), total_(static_cast<int>(m) * v), group_(p * v), warm_(warm) {}

  ZeroReplay replay(bool prefetch, double slowdown, const PipelineWaits& w, double extra_last) const {
    ZeroStream stream(prefetch, slowdown);
    for (int k = 0; k < warm_; ++k) stream.pass(units_.fwd[chunk_of(k)], false, k == 0 ? w.first : 0.0);
    steady_state(stream, w);
    for (int k = total_ - warm_; k < total_; ++k) {  // (all forwards first when m == p under the interleaved schedule)
      stream.pass(units_.bwd[v_ - 1 - chunk_of(k)], true,
                  w.cooldown + (k == 0 ? w.backward : 0.0) + (k == total_ - 1 ? extra_last : 0.0));
    }
    return stream.result();
  }

 private:
  int chunk_of(int k) const { return (k % group_) / p_; }

  // The steady part repeats every p v pairs: once two consecutive periods move the stream's state by the same amount,
  // the remaining whole periods are added at once (a 405B plan has thousands of passes).
  void steady_state(ZeroStream& stream, const PipelineWaits& w) const {
    const int steady = total_ - warm_;
    ZeroStream::State last{}, before = stream.state();
    bool have_last = false;
    for (int k = 0; k < steady; ++k) {
      stream.pass(units_.fwd[chunk_of(k + warm_)], false, k == 0 && warm_ == 0 ? w.first : 0.0);
      stream.pass(units_.bwd[v_ - 1 - chunk_of(k)], true, k == 0 ? w.backward : w.lag);
      if ((k + 1) % group_ != 0) continue;
      const ZeroStream::State now = stream.state();
      const ZeroStream::State d{now.dp - before.dp, now.comp - before.comp, now.idle - before.idle,
                                now.host - before.host, now.work - before.work};
      const int periods_left = (steady - k - 1) / group_;
      if (have_last && periods_left > 0 && same_period(d, last)) {
        stream.repeat(d, periods_left);
        k += periods_left * group_;
      }
      last = d;
      have_last = true;
      before = stream.state();
    }
  }

  static bool same_period(const ZeroStream::State& d, const ZeroStream::State& last) {
    auto same = [](double a, double b) { return std::fabs(a - b) <= 1e-12 + 1e-9 * std::fabs(b); };
    return same(d.dp, last.dp) && same(d.comp, last.comp) && same(d.idle, last.idle) && same(d.host, last.host);
  }

  const StageUnits& units_;
  int p_, v_, total_, group_, warm_;
};

// Stage s's replay; `extra_first`, `extra_last`: how much longer than the stages' passes alone its first forward
// waits for its input and its last backward for its gradient (the other stages' own waits for gathers in the fill
// and the drain).
ZeroReplay replay_stage(const DpStep& step, const std::vector<StageCosts>& st, const StageUnits& units, int s,
                        double extra_first, double extra_last) {
  const auto& par = step.job.parallelism;
  const int p = par.pipeline, v = par.virtual_stages;
  const int64_t m = step.job.num_microbatches();
  const int warm = workload::warmup_steps(par.schedule, s, p, v, static_cast<int>(m), false,
                                          workload::all_forwards_first(step.job.training));
  const PipelineWaits w = pipeline_waits(st, s, v, warm, step.lc.host_syncs, extra_first);
  const bool prefetch = step.job.training.zero3_param_fetch == spec::Zero3Fetch::Prefetch;
  return StageSchedule(units, p, v, m, warm).replay(prefetch, step.slowdown, w, extra_last);
}

// ZeRO-3 through a pipeline: a stage's first forward also waits for the gathers the stages before it waited for in
// theirs, and its last backward for those of the stages after it in their last backward; the stream catches up
// meanwhile, so replayed once more with those waits (from the first replay) its own fill and drain waits are shorter.
// Only those two come from the second replay: the rest, the step's bounds among them, keeps the first replay's
// timeline, on which the pipeline's fill and drain are counted apart. Not under the interleaved schedule, whose fill
// and drain pass chunk by chunk.
void replay_fill_and_drain(const DpStep& step, const std::vector<StageCosts>& st, const std::vector<StageUnits>& units,
                           std::vector<ZeroReplay>& zs) {
  const int p = static_cast<int>(st.size());
  std::vector<double> fill(p), drain(p);
  for (int s = 0; s < p; ++s) {
    double before = 0, after = 0;
    for (int j = 0; j < s; ++j) before += zs[j].first_pass_s;
    for (int j = s + 1; j < p; ++j) after += zs[j].last_pass_s;
    const ZeroReplay again = replay_stage(step, st, units[s], s, before, after);
    fill[s] = again.first_pass_s, drain[s] = again.last_pass_s;
  }
  for (int s = 0; s < p; ++s) zs[s].first_pass_s = fill[s], zs[s].last_pass_s = drain[s];
}

}  // namespace

void replay_zero_streams(const DpStep& step, const std::vector<double>& paired_share, std::vector<StageCosts>& st) {
  const int p = static_cast<int>(st.size());
  const std::vector<StageUnits> units = zero_stage_units(step, paired_share);
  std::vector<ZeroReplay> zs(p);
  for (int s = 0; s < p; ++s) zs[s] = replay_stage(step, st, units[s], s, 0, 0);
  if (step.job.training.zero_stage == 3 && p > 1 && step.chunks.virtual_stages == 1)
    replay_fill_and_drain(step, st, units, zs);
  const double m = static_cast<double>(step.job.num_microbatches());
  for (int s = 0; s < p; ++s) {
    st[s].zero_wait = zs[s].exposed_s / m;
    st[s].zero = zs[s];
  }
}

}  // namespace stepsim::plan::estimate
