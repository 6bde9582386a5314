#include "stepsim/plan/estimate/zero_stream.hpp"

#include <algorithm>

namespace stepsim::plan::estimate {

void ZeroStream::pass(const ZeroUnits& u, bool backward, double pipeline_wait) {
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
    comp_ = std::max(start + u.compute[i], host_);
    if (backward && u.scatter[i] > 0) scatter(u.scatter[i]);
  }
  if (passes_++ == 0) first_idle_ = idle_ - idle_before;
  last_idle_ = idle_ - idle_before;
}

ZeroReplay ZeroStream::result() const {
  return {idle_, std::max(0.0, dp_ - comp_), comp_, first_idle_, last_idle_, std::max(0.0, first_scatter_) + work_};
}

void ZeroStream::repeat(const State& d, double times) {
  dp_ += d.dp * times;
  comp_ += d.comp * times;
  idle_ += d.idle * times;
  host_ += d.host * times;
  work_ += d.work * times;
}

// A unit's gradients reduce-scattered once its backward has run, behind what the stream still has.
void ZeroStream::scatter(double seconds) {
  if (first_scatter_ < 0) first_scatter_ = std::max(dp_, comp_);
  dp_ = std::max(dp_, comp_) + seconds;
  work_ += seconds;
}

// Unit k's gather issued (once per pass) behind what the stream still has.
void ZeroStream::issue(const ZeroUnits& u, size_t k) {
  if (k >= u.compute.size() || gathered_[k] >= 0) return;
  if (u.gather[k] <= 0) {
    gathered_[k] = 0;
    return;
  }
  dp_ = std::max(dp_, comp_) + u.gather[k];
  if (first_scatter_ >= 0) work_ += u.gather[k];
  gathered_[k] = dp_;
}

}  // namespace stepsim::plan::estimate
