// stepsim compare SIMULATED.trace.json MEASURED_TRACE [--rank R] [--step N] [--json OUT] [--out SIDE.trace.json]
// [--top K]: where a prediction goes wrong — step error, error per op type, per kernel name, and a side-by-side
// Chrome trace. docs/COMPARE.md.
#include <iostream>
#include <memory>

#include "stepsim/io/utf8.hpp"
#include "stepsim/api/compare.hpp"
#include "stepsim/cli/commands.hpp"

namespace stepsim::cli {
namespace {

struct CompareArgs {
  api::CompareOptions opt;
  std::string json_path, out_path;
};

int run_compare(const CompareArgs& a) {
  const api::CompareOutput out = api::compare_traces(a.opt);
  if (!a.json_path.empty()) write_output_file(a.json_path, io::json_text(out.json, 2) + "\n", "comparison JSON");
  if (!a.out_path.empty()) api::write_side_by_side(a.out_path, out);
  std::cout << out.text;
  return 0;
}

}  // namespace

Action add_compare(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand("compare", "compare a simulated step with a measured one: step error, error "
                                                 "per op type and kernel, side-by-side trace");
  cmd->add_option("simulated", a->opt.simulated, "the trace of stepsim simulate --trace")->required();
  cmd->add_option("measured", a->opt.measured, "a PyTorch profiler (Kineto) trace, or another stepsim trace")->required();
  cmd->add_option("--rank", a->opt.pick.rank, "rank to compare (default: the measured trace's distributedInfo.rank, else the "
                                     "first rank of the simulated trace)")
      ->check(whole_number_at_least(0));
  cmd->add_option("--step", a->opt.pick.step, "ProfilerStep#N of the measured trace (default: the last that launched kernels)")
      ->check(whole_number_at_least(0));
  cmd->add_option("--json", a->json_path, "write the comparison as JSON here")->check(output_file());
  cmd->add_option("--out", a->out_path, "write the side-by-side Chrome trace here")->check(output_file());
  cmd->add_option("--top", a->opt.top, "kernel names listed, largest error first")
      ->capture_default_str()
      ->check(whole_number_at_least(0));
  return [cmd, a]() { return cmd->parsed() ? run_compare(*a) : -1; };
}

}  // namespace stepsim::cli
