#pragma once
// StepTrace: one rank's step as `stepsim compare` sees it, from either side — a stepsim Chrome trace (simulated)
// or a Kineto trace (measured): the step's window and the GPU events in it, each with its op type. docs/COMPARE.md.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace stepsim::compare {

enum class EventRole : uint8_t {
  Busy,     // a kernel or communication op: counts toward its type and the GPU's busy time
  Sync,     // stepsim's "wait: ..." slice; already inside the following op's wait_ns, drawn only
  HostGap,  // stepsim's trace-driven host gap (the CPU was late): idle time, drawn only
};

struct GpuEvent {
  uint32_t name = 0;      // index into StepTrace::names
  std::string type;       // op type (op_type.hpp); empty for Sync and HostGap
  EventRole role = EventRole::Busy;
  int64_t tid = 0;        // stepsim: stream index; Kineto: CUDA stream
  int64_t start_ns = 0, dur_ns = 0;  // as drawn in the trace
  int64_t wait_ns = 0;    // stepsim collectives: synchronisation wait before start_ns, counted as the op's time
                          // (a measured NCCL kernel's duration includes its wait for the peers)
  std::string args;       // JSON members (without braces) for the side-by-side trace
  int64_t begin_ns() const { return start_ns - wait_ns; }   // the op's time on the GPU, wait included
  int64_t end_ns() const { return start_ns + dur_ns; }
};

struct StepTrace {
  std::string path;
  std::string format;            // "stepsim" or "kineto"
  int rank = 0;
  std::string label;             // "ProfilerStep#10", "all kernels", "simulated step"
  int64_t begin_ns = 0, end_ns = 0;  // the step window
  std::vector<GpuEvent> events;  // in start order
  std::vector<std::string> names;
  std::map<int64_t, std::string> threads;  // tid -> thread name
  int64_t step_ns() const { return end_ns - begin_ns; }
  const std::string& name(const GpuEvent& e) const { return names[e.name]; }
};

}  // namespace stepsim::compare
