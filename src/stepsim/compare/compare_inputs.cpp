#include "stepsim/compare/compare_inputs.hpp"

#include "stepsim/compare/measured_step.hpp"
#include "stepsim/compare/stepsim_trace.hpp"
#include "stepsim/compare/trace_format.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/kineto_trace.hpp"

namespace stepsim::compare {

CompareInputs load_compare_inputs(const std::string& sim_path, const std::string& meas_path, const CompareOptions& o) {
  if (o.rank && (*o.rank < 0 || *o.rank >= (1 << 24)))
    throw InputError("--rank " + std::to_string(*o.rank) + ": must be a rank in [0, 2^24)");
  CompareInputs in;
  // The measured side first: a Kineto trace names the rank to compare. One file's text is held at a time.
  std::optional<trace::KinetoTrace> kineto;
  std::optional<int> rank = o.rank;
  {
    const trace::TextBuffer text = trace::read_text_file(meas_path);
    if (peek_trace_kind(text, meas_path) == TraceKind::Kineto) {
      kineto = trace::parse_kineto_trace(text, meas_path);
      if (!rank && kineto->rank >= 0) rank = kineto->rank;
    } else if (o.step) {
      throw InputError(meas_path + ": --step picks a ProfilerStep of a Kineto trace; this is a stepsim trace");
    }
  }
  {
    const trace::TextBuffer text = trace::read_text_file(sim_path);
    if (peek_trace_kind(text, sim_path) != TraceKind::Stepsim)
      throw InputError(sim_path + ": the first trace must be stepsim's (otherData.generator \"stepsim\", written by "
                       "stepsim simulate --trace); this one is a profiler trace");
    in.sim = parse_stepsim_trace(text, sim_path, rank);
  }
  if (kineto) {
    in.meas = measured_step(*kineto, o.step, kineto->rank >= 0 ? kineto->rank : in.sim.rank);
  } else {
    in.meas = parse_stepsim_trace(trace::read_text_file(meas_path), meas_path, in.sim.rank);
  }
  return in;
}

}  // namespace stepsim::compare
