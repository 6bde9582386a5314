// stepsim memory: analytic per-rank memory of every pipeline stage, without running the engine.
#include <iostream>
#include <memory>

#include "stepsim/io/utf8.hpp"
#include "stepsim/cli/commands.hpp"
#include "stepsim/api/memory.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::cli {

namespace {

struct MemoryOptions {
  JobOptions job;
  std::string json_path;
};

int run_memory(const MemoryOptions& o) {
  const api::MemoryOutput m = api::memory(o.job);
  std::cout << m.text;
  if (!o.json_path.empty()) write_output_file(o.json_path, io::json_text(m.json, 2) + "\n", "memory JSON");
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
