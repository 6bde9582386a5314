// stepsim whatif: the job before and after scaling some of its numeric keys, as step time, MFU, end-to-end time
// of a run with failures and checkpoints, and cost. docs/WHATIF.md. The work is the library's (api/whatif.hpp).
#include <cstdio>
#include <iostream>
#include <sstream>

#include "stepsim/api/whatif.hpp"
#include "stepsim/cli/commands.hpp"
#include "stepsim/cli/load_job.hpp"
#include "stepsim/report/text_format.hpp"

namespace stepsim::cli {
namespace {

struct WhatIfOptions : api::WhatIfOptions {
  std::string json_path;
};

std::string duration(double s) {
  return s >= 86400 * 2 ? report::format_number("%.2f days", s / 86400) : s >= 7200 ? report::format_number("%.2f h", s / 3600) : report::format_number("%.1f s", s);
}

std::string change(double before, double after) {
  return before > 0 ? report::format_number("%+.1f %%", (after / before - 1) * 100) : "";
}

int run_whatif(const WhatIfOptions& o) {
  const api::WhatIfOutput r = api::whatif(o);
  const spec::JobSpec& before_job = r.before_job;
  const plan::Outcome &b = r.before, &a = r.after;

  std::ostringstream out;
  out << "stepsim whatif: " << before_job.model.name << " on " << before_job.cluster.num_gpus << " x "
      << before_job.cluster.gpu << ", " << o.settings.steps << " steps, " << o.settings.failures_per_node_day
      << " failures per node-day, checkpoints at " << o.settings.storage_GBps << " GB/s\n";
  for (const std::string& s : o.scales) out << "  --scale " << s << "\n";
  auto row = [&](const std::string& name, const std::string& vb, const std::string& va, const std::string& c) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-22s %18s %18s %10s\n", name.c_str(), vb.c_str(), va.c_str(), c.c_str());
    out << line;
  };
  row("", "before", "after", "change");
  row("GPUs", std::to_string(b.gpus), std::to_string(a.gpus), change(b.gpus, a.gpus));
  row("step time", report::format_number("%.4f s", b.step_time_s), report::format_number("%.4f s", a.step_time_s), change(b.step_time_s, a.step_time_s));
  row("tokens/s", report::format_number("%.0f", b.tokens_per_s), report::format_number("%.0f", a.tokens_per_s), change(b.tokens_per_s, a.tokens_per_s));
  row("TFLOP/s per GPU", report::format_number("%.1f", b.tflops_per_gpu), report::format_number("%.1f", a.tflops_per_gpu),
      change(b.tflops_per_gpu, a.tflops_per_gpu));
  row("MFU", report::format_number("%.1f %%", b.mfu * 100), report::format_number("%.1f %%", a.mfu * 100), change(b.mfu, a.mfu));
  row("fits in memory", b.oom ? "no (OOM)" : "yes", a.oom ? "no (OOM)" : "yes", "");
  row("checkpoint interval", report::format_number("%.0f steps", static_cast<double>(b.interval_steps)),
      report::format_number("%.0f steps", static_cast<double>(a.interval_steps)), "");
  row("ETTR", report::format_number("%.2f %%", b.ettr * 100), report::format_number("%.2f %%", a.ettr * 100), "");
  row("end-to-end time", duration(b.e2e_s), duration(a.e2e_s), change(b.e2e_s, a.e2e_s));
  row("GPU-hours", report::format_number("%.0f", b.gpu_hours), report::format_number("%.0f", a.gpu_hours), change(b.gpu_hours, a.gpu_hours));
  if (o.settings.usd_per_gpu_hour > 0)
    row("cost", report::format_number("%.0f USD", b.cost_usd), report::format_number("%.0f USD", a.cost_usd), change(b.cost_usd, a.cost_usd));
  std::cout << out.str();

  if (!o.json_path.empty()) write_output_file(o.json_path, r.json.dump(2) + "\n", "what-if JSON");
  return 0;
}

}  // namespace

Action add_whatif(CLI::App& app) {
  auto o = std::make_shared<WhatIfOptions>();
  CLI::App* cmd = app.add_subcommand("whatif", "step time, MFU, end-to-end time and cost before and after scaling job keys");
  add_job_options(*cmd, o->job);
  cmd->add_option("--scale", o->scales,
                  "KEY=FACTOR, repeatable: multiply a numeric job key, e.g. inter_node_bandwidth=2, num_gpus=3 "
                  "(keys: docs/WHATIF.md)");
  cmd->add_option("--steps", o->settings.steps, "steps of the run for the end-to-end time")->capture_default_str();
  cmd->add_option("--failure-rate", o->settings.failures_per_node_day, "failures per node per day")
      ->capture_default_str();
  cmd->add_option("--storage-GBps", o->settings.storage_GBps, "checkpoint write bandwidth, GB/s")
      ->capture_default_str();
  cmd->add_option("--price", o->settings.usd_per_gpu_hour, "USD per GPU-hour, for the cost rows");
  cmd->add_option("--json", o->json_path, "write before/after as JSON here")->check(output_file());
  return [o, cmd]() { return cmd->parsed() ? run_whatif(*o) : -1; };
}

}  // namespace stepsim::cli
