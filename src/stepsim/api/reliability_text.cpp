#include <cstdio>
#include <sstream>

#include "stepsim/api/reliability.hpp"
#include "stepsim/report/text_format.hpp"

namespace stepsim::api {
namespace {

// Seconds, with days beside a long time.
std::string secs(double s) {
  char b[64];
  if (s >= 86400.0) std::snprintf(b, sizeof b, "%.1f s = %.2f days", s, s / 86400.0);
  else std::snprintf(b, sizeof b, "%.3f s", s);
  return b;
}

}  // namespace

std::string reliability_text(const ReliabilityOutput& x) {
  const plan::ReliabilityInputs& in = x.r.in;
  const double per_day = static_cast<double>(in.nodes) * in.failures_per_node_day;
  std::ostringstream o;
  o << "stepsim reliability: " << report::counted(in.nodes, "node", "nodes") << ", " << in.steps
    << " steps of " << secs(in.step_time_s) << " (" << x.r.step_time_source << ")\n";
  if (x.r.tokens > 0) {
    o << "  tokens            " << report::format_number("%.4g", x.r.tokens) << " = " << in.steps << " steps of "
      << report::format_number("%.0f", x.r.tokens_per_step) << " tokens (global batch x sequence; the last step "
      << "rounded up)\n";
  }
  o << "  failures          " << report::format_number("%g", in.failures_per_node_day) << " per node-day x "
    << report::counted(in.nodes, "node", "nodes") << " = " << report::format_number("%.4g", per_day) << " per day, one every " << report::format_number("%.2f", 24.0 / per_day) << " h\n";
  o << "  repair u_b        " << secs(plan::mean_time_to_repair(in.recovery)) << " (" << x.r.recovery_source;
  if (in.recovery.size() > 1) {
    for (size_t k = 0; k < in.recovery.size(); ++k) {
      o << (k ? ", " : ": ") << report::format_number("%.1f", 100.0 * in.recovery[k].probability) << " % " << in.recovery[k].name
        << " " << secs(in.recovery[k].time_s);
    }
  }
  o << ")\n  checkpoint save   " << secs(in.save_time_s) << " (" << x.r.save_time_source;
  if (x.r.checkpoint_bytes > 0) {
    o << ": " << report::format_number("%.1f", x.r.checkpoint_bytes / 1e9) << " GB at "
      << report::format_number("%.1f", x.r.storage_GBps) << " GB/s";
  }
  o << ")\n  optimal interval  " << x.optimum << " steps = " << secs(static_cast<double>(x.optimum) * in.step_time_s)
    << " (eq. 44: " << report::format_number("%.3f", x.continuous_optimum) << " steps; of floor and ceiling the smaller G, eq. 43)\n";
  if (x.interval != x.optimum) o << "  interval used     " << x.interval << " steps (--interval)\n";
  o << "  ETTR              " << report::format_number("%.3f", 100.0 * x.ettr) << " %\n";
  o << "  end-to-end time   " << secs(x.e2e.total_s) << "\n";
  // Each part in seconds (they add up to the total) and as people read a duration.
  auto part = [&](const char* name, double s, const std::string& how) {
    o << "    " << name << report::format_number("%16.3f s", s)
      << report::format_number("  %6.2f %%", 100.0 * s / x.e2e.total_s) << (how.empty() ? "  " + report::format_duration(s)
                       : report::format_text("  %-11s", report::format_duration(s).c_str()) + how)
      << "\n";
  };
  part("training        ", x.e2e.training_s, "");
  part("checkpoint saves", x.e2e.saves_s, "  " + std::to_string(x.e2e.checkpoints) + " saves");
  part("repair          ", x.e2e.repair_s, "  " + report::format_number("%.2f", x.e2e.failures) + " failures expected");
  part("lost work       ", x.e2e.lost_work_s, "  half an interval per failure");
  if (in.init_time_s > 0) part("start-up        ", x.e2e.init_s, "");
  if (x.mc) {
    const plan::MonteCarloResult& m = *x.mc;
    o << "  Monte Carlo       " << m.runs << " runs, seed " << m.seed << ": mean " << report::format_number("%.1f s", m.mean_s)
      << " +- " << report::format_number("%.1f s", m.std_error_s) << " (std. error), " << report::format_number("%.2f", m.mean_failures)
      << " failures per run\n";
    o << "                    p50 " << report::format_number("%.1f s", m.p50_s) << ", p95 " << report::format_number("%.1f s", m.p95_s) << ", p99 "
      << report::format_number("%.1f s", m.p99_s) << "\n";
  }
  return o.str();
}

}  // namespace stepsim::api
