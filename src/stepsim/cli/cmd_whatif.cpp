// stepsim whatif: the job before and after scaling some of its numeric keys, as step time, MFU, end-to-end time
// of a run with failures and checkpoints, and cost. docs/WHATIF.md. The work is the library's (api/whatif.hpp).
#include <iostream>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/utf8.hpp"
#include "stepsim/api/whatif.hpp"
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {
namespace {

struct WhatIfOptions : api::WhatIfOptions {
  std::string json_path;
  double tokens_given = 0;
  CLI::Option *o_tokens = nullptr, *o_steps = nullptr;
};

int run_whatif(WhatIfOptions& o) {
  if (o.o_tokens->count() > 0) {
    if (o.o_steps->count() > 0) throw InputError("--tokens: gives the steps of each side; not with --steps");
    o.tokens = o.tokens_given;
  }
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
  cmd->add_flag("--replan", o->replan,
               "re-plan the after side: its layout becomes plan #1 of `stepsim plan` for the after job "
               "(docs/WHATIF.md)");
  cmd->add_option("--to", o->to,
                  "KEY=VALUE, repeatable: set any job key on the after side, e.g. cluster.gpu=B200 (a new GPU brings "
                  "its own NVLink rate; docs/WHATIF.md)");
  o->o_steps =
      cmd->add_option("--steps", o->settings.steps, "steps of the run for the end-to-end time")->capture_default_str();
  o->o_tokens = cmd->add_option("--tokens", o->tokens_given,
                                "a token budget instead of --steps: each side runs tokens / (global batch x sequence) "
                                "steps, e.g. 15e12");
  cmd->add_option("--failure-rate", o->settings.failures_per_node_day, "failures per node per day")
      ->capture_default_str();
  cmd->add_option("--storage-GBps", o->settings.storage_GBps, "checkpoint write bandwidth, GB/s")
      ->capture_default_str();
  cmd->add_option("--price", o->settings.usd_per_gpu_hour, "USD per GPU-hour, for the cost rows");
  cmd->add_option("--json", o->json_path, "write before/after as JSON here")->check(output_file());
  return [o, cmd]() { return cmd->parsed() ? run_whatif(*o) : -1; };
}

}  // namespace stepsim::cli
