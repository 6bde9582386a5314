// stepsim compare SIMULATED.trace.json MEASURED_TRACE [--rank R] [--step N] [--json OUT] [--out SIDE.trace.json]
// [--top K]: where a prediction goes wrong — step error, error per op type, per kernel name, and a side-by-side
// Chrome trace. docs/COMPARE.md.
#include <iostream>
#include <memory>
#include <optional>

#include "stepsim/cli/commands.hpp"
#include "stepsim/compare/compare_inputs.hpp"
#include "stepsim/compare/compare_report.hpp"
#include "stepsim/compare/side_by_side.hpp"
#include "stepsim/compare/step_comparison.hpp"

namespace stepsim::cli {
namespace {

struct CompareArgs {
  std::string sim, meas, json_path, out_path;
  std::optional<int> rank;
  std::optional<int64_t> step;
  size_t top = 10;
};

int run_compare(const CompareArgs& a) {
  const compare::CompareInputs in = compare::load_compare_inputs(a.sim, a.meas, {a.rank, a.step});
  const compare::Comparison c = compare::compare_steps(in.sim, in.meas);
  if (!a.json_path.empty())
    write_output_file(a.json_path, compare::report_json(in.sim, in.meas, c, a.top).dump(2) + "\n", "comparison JSON");
  if (!a.out_path.empty()) compare::write_side_by_side_file(a.out_path, in.sim, in.meas);
  std::cout << compare::report_text(in.sim, in.meas, c, a.top);
  return 0;
}

}  // namespace

Action add_compare(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand("compare", "compare a simulated step with a measured one: step error, error "
                                                 "per op type and kernel, side-by-side trace");
  cmd->add_option("simulated", a->sim, "the trace of stepsim simulate --trace")->required();
  cmd->add_option("measured", a->meas, "a PyTorch profiler (Kineto) trace, or another stepsim trace")->required();
  cmd->add_option("--rank", a->rank, "rank to compare (default: the measured trace's distributedInfo.rank, else the "
                                     "first rank of the simulated trace)");
  cmd->add_option("--step", a->step, "ProfilerStep#N of the measured trace (default: the last that launched kernels)");
  cmd->add_option("--json", a->json_path, "write the comparison as JSON here")->check(output_file());
  cmd->add_option("--out", a->out_path, "write the side-by-side Chrome trace here")->check(output_file());
  cmd->add_option("--top", a->top, "kernel names listed, largest error first")->capture_default_str();
  return [cmd, a]() { return cmd->parsed() ? run_compare(*a) : -1; };
}

}  // namespace stepsim::cli
