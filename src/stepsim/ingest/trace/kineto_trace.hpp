#pragma once
// A PyTorch profiler (Kineto) Chrome trace, reduced to what an imported program needs: GPU kernels (stream,
// start, duration, correlation), the CPU ops that launched them, collective metadata, ProfilerStep spans and
// distributedInfo. Times are integer nanoseconds as written (Kineto's `ts`/`dur` are microseconds, decimals
// kept to the nanosecond). Keys read: docs/TRACES.md.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/ingest/trace/text_buffer.hpp"

namespace stepsim::trace {

// Communication metadata PyTorch records (record_param_comms / kernel args, or nccl:* ops' Input Dims).
struct CollMeta {
  std::string name;               // "Collective name" (allreduce, all_to_allv, ...) or the nccl:<name> op suffix
  int64_t in_nelems = -1, out_nelems = -1;
  std::string dtype;              // "Float", "float", "c10::BFloat16", ...
  int group_size = -1;
  std::vector<int> group_ranks;   // "Process Group Ranks"
  bool any() const { return !name.empty() || in_nelems >= 0 || group_size >= 0; }
};

struct CpuOp {
  uint32_t name = 0;                     // index into KinetoTrace::names
  int meta = -1;                         // index into KinetoTrace::metas, -1 = none
  int64_t pid = -1, tid = -1;
  int64_t start_ns = 0, dur_ns = 0;
  int64_t external_id = -1, rf_id = -1;  // "External id", "Record function id"
};

// Fields ordered so that no padding is needed (80 bytes; a trace may keep millions).
struct Kernel {
  uint32_t name = 0;     // index into KinetoTrace::names
  int meta = -1;         // the kernel's own collective args (2024+ traces), index into metas
  int64_t stream = -1, device = -1;
  int64_t start_ns = 0, dur_ns = 0;
  int64_t correlation = -1, external_id = -1;
  int64_t launch_ns = INT64_MIN;  // CPU time of its launch call (INT64_MIN when not found)
  int cpu_op = -1;       // launching CPU op (index into cpu_ops), -1 when not found
  int comm_op = -1;      // innermost enclosing CPU op with collective metadata or an nccl:* name
  int step = -1;         // ProfilerStep#N whose CPU span holds the launch, -1 when none
  bool nccl = false;
};

// A caching-allocator event (`[memory]` instant events of traces recorded with profile_memory=True).
struct MemoryEvent {
  int64_t ts_ns = 0;               // CPU time of the (de)allocation
  int device_type = -1;            // "Device Type": 0 CPU, 1 CUDA
  int64_t device = -1;             // "Device Id"
  int64_t bytes = 0;               // "Bytes": + allocated, - freed
  int64_t total_allocated = -1;    // "Total Allocated" on that device after the event
};

struct ProfilerStep {
  int64_t number = -1;
  int64_t start_ns = 0, dur_ns = 0;
};

struct KinetoTrace {
  std::string path;
  int rank = -1, world_size = -1;  // distributedInfo; -1 when absent
  int64_t cpu_pid = -1;            // pid of the CPU ops (pairs an execution trace with its Kineto trace)
  std::vector<Kernel> kernels;     // cat "kernel", in start order
  std::vector<CpuOp> cpu_ops;      // cat "cpu_op" and "user_annotation"
  std::vector<ProfilerStep> steps; // in start order
  std::vector<std::string> names;  // interned event names
  std::vector<CollMeta> metas;
  std::vector<MemoryEvent> memory; // in time order
  const std::string& name(const Kernel& k) const { return names[k.name]; }
  const std::string& name(const CpuOp& o) const { return names[o.name]; }
  int64_t launches_found = 0;      // kernels whose launch (cuda runtime/driver call) was found by correlation
};

// Parses a Kineto trace held in `text` (padded, see TextBuffer) and links kernels to CPU ops. `name` labels
// errors. InputError (one line naming `name` and the rule) on malformed or hostile input.
KinetoTrace parse_kineto_trace(const TextBuffer& text, const std::string& name);
KinetoTrace read_kineto_trace(const std::string& path);

// True for NCCL kernel names (ncclKernel_*, ncclDevKernel_*, optionally after "void ").
bool is_nccl_kernel(const std::string& name);

// Kernel events a Kineto trace's text holds: each `"cat"` key (not inside a string: no backslash before its quote)
// whose value is "kernel", by a scan of the text, before any parse. Each becomes one op of the rank's program.
size_t count_kernel_events(std::string_view text);

// Refuses a trace whose kernels alone would make its rank file larger than `simulate --workload` reads, each op
// taking at least `op_bytes` there (trace import's floor, min_imported_op_bytes): before the parse, which would take
// about 900 bytes per op and seconds.
void check_kernel_events_fit(const std::string& path, size_t kernels, uintmax_t op_bytes);

}  // namespace stepsim::trace
