#pragma once
// One ProfilerStep of a PyTorch profiler (Kineto) trace as `stepsim compare` measures it: the step's window is
// the ProfilerStep#N CPU span, its events are the GPU kernels launched in it, each typed as `stepsim trace import`
// classifies it (so an NCCL SendRecv that PyTorch issued as an all-to-all is an all_to_all on both sides).
#include <cstdint>
#include <optional>

#include "stepsim/compare/step_trace.hpp"
#include "stepsim/ingest/trace/kineto_trace.hpp"

namespace stepsim::compare {

// `step`: the ProfilerStep number; nullopt: the last step that launched kernels (the one `stepsim simulate
// --workload` replays by default); a trace without ProfilerSteps is one step spanning all its kernels. `rank` labels
// the result. InputError naming the trace when the step does not exist or launched no kernel.
StepTrace measured_step(const trace::KinetoTrace& k, std::optional<int64_t> step, int rank);

}  // namespace stepsim::compare
