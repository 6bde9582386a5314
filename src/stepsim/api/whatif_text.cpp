#include <algorithm>
#include <cstdio>
#include <sstream>

#include "stepsim/api/whatif.hpp"
#include "stepsim/report/text_format.hpp"

namespace stepsim::api {
namespace {

std::string change(double before, double after) {
  return before > 0 ? report::format_number("%+.1f %%", (after / before - 1) * 100) : "";
}

}  // namespace

std::string whatif_text(const WhatIfOptions& o, const WhatIfOutput& r) {
  const spec::JobSpec& before_job = r.before_job;
  const plan::Outcome &b = r.before, &a = r.after;

  std::ostringstream out;
  out << "stepsim whatif: " << before_job.model.name << " on " << before_job.cluster.num_gpus << " x "
      << before_job.cluster.gpu << ", "
      << (o.tokens ? report::format_number("%.4g tokens", *o.tokens) : std::to_string(o.settings.steps) + " steps")
      << ", " << o.settings.failures_per_node_day << " failures per node-day, checkpoints at "
      << o.settings.storage_GBps << " GB/s\n";
  for (const std::string& s : o.scales) out << "  --scale " << s << "\n";
  for (const std::string& s : o.to) out << "  --to " << s << "\n";
  for (const std::string& n : r.notes) out << "  note: " << n << "\n";
  auto row = [&](const std::string& name, const std::string& vb, const std::string& va, const std::string& c) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-22s %18s %18s %10s\n", name.c_str(), vb.c_str(), va.c_str(), c.c_str());
    out << line;
  };
  row("", "before", "after", "change");
  row("GPUs", std::to_string(b.gpus), std::to_string(a.gpus), change(b.gpus, a.gpus));
  if (r.before_job.cluster.gpu != r.after_gpu) row("GPU", r.before_job.cluster.gpu, r.after_gpu, "");
  row("NVLink per GPU", report::format_number("%g GB/s", b.intra_node_GBps),
      report::format_number("%g GB/s", a.intra_node_GBps), change(b.intra_node_GBps, a.intra_node_GBps));
  if (o.tokens) {
    row("steps (tokens)", std::to_string(r.before_steps), std::to_string(r.after_steps),
        change(static_cast<double>(r.before_steps), static_cast<double>(r.after_steps)));
  }
  row("step time", report::format_number("%.4f s", b.step_time_s), report::format_number("%.4f s", a.step_time_s), change(b.step_time_s, a.step_time_s));
  row("tokens/s", report::format_number("%.0f", b.tokens_per_s), report::format_number("%.0f", a.tokens_per_s), change(b.tokens_per_s, a.tokens_per_s));
  row("TFLOP/s per GPU", report::format_number("%.1f", b.tflops_per_gpu), report::format_number("%.1f", a.tflops_per_gpu),
      change(b.tflops_per_gpu, a.tflops_per_gpu));
  // A side at fp8 or nvfp4 is against that precision's peak: said beside its figure.
  auto mfu = [](const plan::Outcome& x) {
    return report::format_number("%.1f %%", x.mfu * 100) + (x.mfu_of.empty() ? "" : " of " + x.mfu_of);
  };
  row("MFU", mfu(b), mfu(a), change(b.mfu, a.mfu));
  auto fits = [](const plan::Outcome& x) { return x.oom ? "no (OOM)" : x.memory_tight ? "tight" : "yes"; };
  row("fits in memory", fits(b), fits(a), "");
  row("checkpoint interval", report::format_number("%.0f steps", static_cast<double>(b.interval_steps)),
      report::format_number("%.0f steps", static_cast<double>(a.interval_steps)), "");
  row("ETTR", report::format_number("%.2f %%", b.ettr * 100), report::format_number("%.2f %%", a.ettr * 100), "");
  row("end-to-end time", report::format_duration(b.e2e_s), report::format_duration(a.e2e_s), change(b.e2e_s, a.e2e_s));
  row("GPU-hours", report::format_number("%.0f", b.gpu_hours), report::format_number("%.0f", a.gpu_hours), change(b.gpu_hours, a.gpu_hours));
  if (o.settings.usd_per_gpu_hour > 0)
    row("cost", report::format_usd(b.cost_usd), report::format_usd(a.cost_usd), change(b.cost_usd, a.cost_usd));
  // The links each side ran on, and what the after side's simulation noted that the before side's did not (a GPU
  // whose NVLink domain spans more than the job's nodes, a transport's assumed rate, ...).
  if (b.inter_node != a.inter_node) {
    out << "  network before: " << b.inter_node << "\n  network after:  " << a.inter_node << "\n";
  } else {
    out << "  network: " << a.inter_node << "\n";
  }
  for (const std::string& n : a.notes) {
    if (std::find(b.notes.begin(), b.notes.end(), n) == b.notes.end()) out << "  after: note: " << n << "\n";
  }
  return out.str();
}

}  // namespace stepsim::api
