#pragma once
// The comparison of a simulated and a measured step: step error, and per op type the count, GPU time and exposed
// time on both sides with their errors; per kernel name where both sides ran the same kernels. docs/COMPARE.md.
//
// Time of an op: its duration on the GPU; a simulated collective's includes its synchronisation wait, as a
// measured NCCL kernel spins until its peers arrive. Exposed time: every instant of the step window is shared
// equally among the ops running at it, and instants with none are idle; so per side the exposed times of all
// types (idle included) add up to the step, and their errors add up to the step error.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/compare/step_trace.hpp"

namespace stepsim::compare {

struct SideStats {
  int64_t count = 0;
  int64_t total_ns = 0;   // sum of the ops' times (overlapping ops each count in full); idle: the idle time
  double exposed_ns = 0;  // share of the step window (see above)
};

struct TypeRow {
  std::string type;
  SideStats sim, meas;
  int64_t error_ns() const { return sim.total_ns - meas.total_ns; }
  double exposed_error_ns() const { return sim.exposed_ns - meas.exposed_ns; }
};

struct KernelRow {
  std::string name;  // without "void " and the argument list
  int64_t count = 0;
  int64_t sim_ns = 0, meas_ns = 0;
  int64_t error_ns() const { return sim_ns - meas_ns; }
};

struct Comparison {
  int64_t sim_step_ns = 0, meas_step_ns = 0;
  std::vector<TypeRow> types;      // types seen on either side in report order, idle last
  std::vector<KernelRow> kernels;  // names run equally often on both sides, largest |error| first
  int64_t sim_ops = 0, meas_ops = 0, matched_ops = 0;  // ops in the steps; in `kernels`
  int64_t step_error_ns() const { return sim_step_ns - meas_step_ns; }
};

Comparison compare_steps(const StepTrace& sim, const StepTrace& meas);

// Relative error a/b - 1 style helpers: nullopt when the reference is 0.
std::optional<double> relative(double error, double reference);

}  // namespace stepsim::compare
