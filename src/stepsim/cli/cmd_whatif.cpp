// stepsim whatif: the job before and after scaling some of its numeric keys, as step time, MFU, end-to-end time
// of a run with failures and checkpoints, and cost. docs/WHATIF.md. The work is the library's (api/whatif.hpp).
#include <iostream>

#include "stepsim/io/utf8.hpp"
#include "stepsim/api/whatif.hpp"
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {
namespace {

struct WhatIfOptions : api::WhatIfOptions {
  std::string json_path;
};

int run_whatif(const WhatIfOptions& o) {
  const api::WhatIfOutput r = api::whatif(o);
  std::cout << api::whatif_text(o, r);
  if (!o.json_path.empty()) write_output_file(o.json_path, io::json_text(r.json, 2) + "\n", "what-if JSON");
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
