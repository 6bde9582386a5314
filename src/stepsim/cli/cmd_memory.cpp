// stepsim memory: analytic per-rank memory of every pipeline stage, without running the engine.
#include <iostream>
#include <memory>

#include "stepsim/cli/commands.hpp"
#include "stepsim/cli/load_job.hpp"
#include "stepsim/report/memory_report.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"

namespace stepsim::cli {

namespace {

struct MemoryOptions {
  JobOptions job;
  std::string json_path;
};

int run_memory(const MemoryOptions& o) {
  const workload::Workload w = workload::build_megatron_workload(load_job(o.job));
  std::cout << report::memory_text(w);
  if (!o.json_path.empty()) {
    write_output_file(o.json_path, report::memory_json(w).dump(2) + "\n", "memory JSON");
  }
  return 0;
}

}  // namespace

Action add_memory(CLI::App& app) {
  auto o = std::make_shared<MemoryOptions>();
  CLI::App* cmd = app.add_subcommand("memory", "per-rank memory of every pipeline stage (analytic)");
  add_job_options(*cmd, o->job);
  cmd->add_option("--json", o->json_path, "write the memory table as JSON here")->check(output_file());
  return [cmd, o]() { return cmd->parsed() ? run_memory(*o) : -1; };
}

}  // namespace stepsim::cli
