#include "stepsim/compare/compare_report.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "stepsim/compare/op_type.hpp"
#include "stepsim/report/text_format.hpp"

namespace stepsim::compare {
namespace {

double ms(double ns) { return ns / 1e6; }
double us(double ns) { return ns / 1e3; }

std::string pct(std::optional<double> r) {
  if (!r) return "-";
  const double v = *r * 100;
  return report::format_number("%+.1f %%", std::fabs(v) < 0.05 ? 0.0 : v);  // no "-0.0 %" from rounding residue
}

std::string mean_us(const SideStats& s) {
  return s.count ? report::format_number("%.1f", us(static_cast<double>(s.total_ns) / static_cast<double>(s.count))) : "-";
}

std::string cut(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

// One table line: the first cell left-aligned in widths[0] columns, the others right-aligned.
std::string line(const std::vector<size_t>& widths, const std::vector<std::string>& cells) {
  std::string o = " ";
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string& s = cells[i];
    const std::string pad(s.size() < widths[i] ? widths[i] - s.size() : 0, ' ');
    o += ' ';
    o += i == 0 ? s + pad : pad + s;
  }
  return o + "\n";
}

nlohmann::json side_json(const StepTrace& t, int64_t ops) {
  return {{"path", t.path}, {"format", t.format}, {"rank", t.rank}, {"step", t.label}, {"ops", ops}};
}

nlohmann::json stats_json(const SideStats& s) {
  nlohmann::json j = {{"count", s.count}, {"total_s", s.total_ns / 1e9}, {"exposed_s", s.exposed_ns / 1e9}};
  j["mean_s"] = s.count ? nlohmann::json(static_cast<double>(s.total_ns) / static_cast<double>(s.count) / 1e9)
                        : nlohmann::json(nullptr);
  return j;
}

nlohmann::json optional_json(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

std::string report_text(const StepTrace& sim, const StepTrace& meas, const Comparison& c, size_t top) {
  std::string o;
  o += "# stepsim compare: rank " + std::to_string(sim.rank) + "\n";
  o += "#   simulated  " + sim.path + " (" + sim.label + ", " + std::to_string(c.sim_ops) + " ops)\n";
  o += "#   measured   " + meas.path + " (" + meas.label + ", " + std::to_string(c.meas_ops) + " ops, rank " +
       std::to_string(meas.rank) + ")\n";
  const double step_err = static_cast<double>(c.step_error_ns());
  o += "step time: simulated " + report::format_number("%.3f ms", ms(c.sim_step_ns)) + ", measured " +
       report::format_number("%.3f ms", ms(c.meas_step_ns)) +
       ", error " + report::format_number("%+.3f ms", ms(step_err)) + " (" + pct(relative(step_err, c.meas_step_ns)) + ")\n\n";

  o += "GPU time per op type (an op's duration; a simulated collective's includes its sync wait; idle: no op "
       "running)\n";
  const std::vector<size_t> f1{14, 11, 12, 12, 11, 9, 12, 12};
  o += line(f1, {"type", "count s/m", "sim ms", "meas ms", "error ms", "error", "mean sim us", "mean meas us"});
  for (const TypeRow& r : c.types) {
    const bool idle = r.type == kIdle;
    o += line(f1, {r.type, idle ? "-" : std::to_string(r.sim.count) + "/" + std::to_string(r.meas.count),
                  report::format_number("%.3f", ms(r.sim.total_ns)), report::format_number("%.3f", ms(r.meas.total_ns)), report::format_number("%+.3f", ms(r.error_ns())),
                  pct(relative(r.error_ns(), r.meas.total_ns)), mean_us(r.sim), mean_us(r.meas)});
  }

  o += "\nStep error by op type (exposed time: each instant of the step shared equally among the ops running then;\n"
       "the rows add up to the step and their errors to the step error)\n";
  const std::vector<size_t> f2{14, 12, 12, 11, 14};
  o += line(f2, {"type", "sim ms", "meas ms", "error ms", "of step error"});
  for (const TypeRow& r : c.types) {
    o += line(f2, {r.type, report::format_number("%.3f", ms(r.sim.exposed_ns)), report::format_number("%.3f", ms(r.meas.exposed_ns)),
                  report::format_number("%+.3f", ms(r.exposed_error_ns())), pct(relative(r.exposed_error_ns(), step_err))});
  }
  o += line(f2, {"step", report::format_number("%.3f", ms(c.sim_step_ns)), report::format_number("%.3f", ms(c.meas_step_ns)), report::format_number("%+.3f", ms(step_err)),
                c.step_error_ns() ? "+100.0 %" : "-"});

  o += "\nKernels by name: " + std::to_string(c.matched_ops) + " of " + std::to_string(c.sim_ops) +
       " simulated ops have a name run equally often on both sides";
  if (c.kernels.empty()) return o + " (no per-kernel comparison)\n";
  o += "; largest errors:\n";
  const std::vector<size_t> f3{60, 6, 10, 10, 10, 9};
  o += line(f3, {"kernel", "count", "sim ms", "meas ms", "error ms", "error"});
  for (size_t i = 0; i < c.kernels.size() && i < top; ++i) {
    const KernelRow& k = c.kernels[i];
    if (k.error_ns() == 0) {
      o += "  (the other " + std::to_string(c.kernels.size() - i) + " names take the same time on both sides)\n";
      break;
    }
    o += line(f3, {cut(k.name, 60), std::to_string(k.count), report::format_number("%.3f", ms(k.sim_ns)), report::format_number("%.3f", ms(k.meas_ns)),
                  report::format_number("%+.3f", ms(k.error_ns())), pct(relative(k.error_ns(), k.meas_ns))});
  }
  return o;
}

nlohmann::json report_json(const StepTrace& sim, const StepTrace& meas, const Comparison& c, size_t top) {
  nlohmann::json j;
  j["rank"] = sim.rank;
  j["simulated"] = side_json(sim, c.sim_ops);
  j["measured"] = side_json(meas, c.meas_ops);
  const double err = static_cast<double>(c.step_error_ns());
  j["step"] = {{"simulated_s", c.sim_step_ns / 1e9}, {"measured_s", c.meas_step_ns / 1e9}, {"error_s", err / 1e9},
               {"relative_error", optional_json(relative(err, c.meas_step_ns))}};
  j["types"] = nlohmann::json::array();
  for (const TypeRow& r : c.types) {
    j["types"].push_back({{"type", r.type},
                          {"simulated", stats_json(r.sim)},
                          {"measured", stats_json(r.meas)},
                          {"error_s", r.error_ns() / 1e9},
                          {"relative_error", optional_json(relative(r.error_ns(), r.meas.total_ns))},
                          {"exposed_error_s", r.exposed_error_ns() / 1e9},
                          {"share_of_step_error", optional_json(relative(r.exposed_error_ns(), err))}});
  }
  nlohmann::json k = {{"simulated_ops", c.sim_ops}, {"measured_ops", c.meas_ops}, {"matched_ops", c.matched_ops},
                      {"top", nlohmann::json::array()}};
  for (size_t i = 0; i < c.kernels.size() && i < top; ++i) {
    const KernelRow& r = c.kernels[i];
    k["top"].push_back({{"name", r.name}, {"count", r.count}, {"simulated_s", r.sim_ns / 1e9},
                        {"measured_s", r.meas_ns / 1e9}, {"error_s", r.error_ns() / 1e9},
                        {"relative_error", optional_json(relative(r.error_ns(), r.meas_ns))}});
  }
  j["kernels"] = k;
  return j;
}

}  // namespace stepsim::compare
