// libFuzzer target for `stepsim compare`'s readers and arithmetic: the input is read as a stepsim trace (first
// rank) and, when it is a Kineto trace, as a measured step; each step is compared with itself and with the other,
// and the side-by-side trace is written. Bad input must end in InputError; any other exception, crash, hang or
// broken invariant below is a bug.
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include "stepsim/compare/measured_step.hpp"
#include "stepsim/compare/side_by_side.hpp"
#include "stepsim/compare/step_comparison.hpp"
#include "stepsim/compare/stepsim_trace.hpp"
#include "stepsim/compare/trace_format.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/kineto_trace.hpp"

#include "fuzz_support.hpp"

using fuzz_support::require;
using namespace stepsim;
using namespace stepsim::compare;

namespace {

void check_step(const StepTrace& t) {
  require(t.end_ns >= t.begin_ns && !t.events.empty());
  for (const GpuEvent& e : t.events) {
    require(e.dur_ns >= 0 && e.wait_ns >= 0 && e.name < t.names.size());
    require(t.threads.count(e.tid) == 1);
    require((e.role == EventRole::Busy) == !e.type.empty());
  }
}

// Per side, the exposed times of all types add up to the step; counts and times are never negative.
void check_comparison(const Comparison& c) {
  double sim = 0, meas = 0;
  for (const TypeRow& r : c.types) {
    require(r.sim.count >= 0 && r.meas.count >= 0 && r.sim.total_ns >= 0 && r.meas.total_ns >= 0);
    require(r.sim.exposed_ns >= 0 && r.meas.exposed_ns >= 0);
    sim += r.sim.exposed_ns;
    meas += r.meas.exposed_ns;
  }
  require(std::fabs(sim - static_cast<double>(c.sim_step_ns)) <= 1e-6 * std::max(1.0, std::fabs(sim)) + 1);
  require(std::fabs(meas - static_cast<double>(c.meas_step_ns)) <= 1e-6 * std::max(1.0, std::fabs(meas)) + 1);
  require(c.matched_ops <= c.sim_ops && c.matched_ops <= c.meas_ops);
}

void compare_and_write(const StepTrace& a, const StepTrace& b) {
  check_comparison(compare_steps(a, b));
  std::ostringstream out;
  write_side_by_side(out, a, b);
  require(!out.str().empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const trace::TextBuffer text = trace::TextBuffer::copy_of(reinterpret_cast<const char*>(data), size);
  std::optional<StepTrace> sim, meas;
  try {
    if (peek_trace_kind(text, "fuzz.json") == TraceKind::Stepsim) {
      sim = parse_stepsim_trace(text, "fuzz.json", std::nullopt);
    } else {
      meas = measured_step(trace::parse_kineto_trace(text, "fuzz.json"), std::nullopt, 0);
    }
  } catch (const InputError&) {
    return 0;
  }
  for (const auto& t : {sim, meas}) {
    if (!t) continue;
    check_step(*t);
    compare_and_write(*t, *t);
    const Comparison self = compare_steps(*t, *t);
    require(self.step_error_ns() == 0 && self.matched_ops == self.sim_ops);
    for (const TypeRow& r : self.types) require(r.error_ns() == 0);
  }
  return 0;
}
