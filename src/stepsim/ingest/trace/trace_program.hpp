#pragma once
// A rank's workload program built from its Kineto trace (and, when given, its execution trace): every GPU kernel
// in start order, compute kernels with their measured durations and guessed category, NCCL kernels as
// communication placeholders (collective, message size S, group, order) whose time the simulator's models decide.
// Format of the files written from it: docs/TRACES.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/ingest/trace/execution_trace.hpp"
#include "stepsim/ingest/trace/kineto_trace.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::trace {

struct ImportedOp {
  workload::OpKind kind = workload::OpKind::Compute;
  uint32_t name = 0;                  // kernel name, index into RankImport::names
  int64_t cuda_stream = -1;
  int64_t start_ns = 0;               // from the rank's first kernel
  int64_t duration_ns = 0;            // measured
  workload::ComputeCategory category = workload::ComputeCategory::Elementwise;
  // Communication (kind Collective or P2P):
  workload::CollType coll = workload::CollType::AllReduce;
  workload::GroupKind group = workload::GroupKind::Dp;
  int64_t bytes = -1;                 // S as nccl-tests counts it; -1 = the trace does not say
  int group_size = -1;
  std::vector<int> group_ranks;
  int seq = -1;                       // order among the rank's communication ops
  std::string collective;             // PyTorch's name for it (allreduce, all_to_allv, nccl:all_reduce -> all_reduce)
  std::string dtype;
  // Provenance:
  int64_t correlation = -1;
  int32_t cpu_op = -1;                // launching CPU op name, index into names; -1 = not found
  int step = -1;                      // ProfilerStep number of the launch
  int64_t et_node = -1;               // execution-trace node id; -1 = not linked
  int64_t mem_alloc = 0, mem_free = 0; // GPU allocator bytes charged to this kernel (alloc at start, free at end)
};

struct RankImport {
  int rank = 0;
  int world_size = -1;
  std::string source;                 // the Kineto trace's path
  std::string execution_trace;        // the paired execution trace's path, empty when none
  std::vector<std::string> names;
  std::vector<ImportedOp> ops;        // in start order
  workload::Program program;          // the same ops as a workload program (compute on the compute stream,
                                      // communication on the stream of its group; no cross-stream waits)
  int64_t kernels = 0, nccl_kernels = 0;
  int64_t launches_found = 0, et_linked = 0;
  double compute_busy_s = 0;          // union of compute-kernel intervals
  std::optional<double> step_time_s;  // mean ProfilerStep#N span
  int profiler_steps = 0;
  struct StepSpan {
    int64_t number = -1;
    int64_t start_ns = 0;  // CPU start of the ProfilerStep, on the ops' clock (from the rank's first kernel)
    int64_t dur_ns = 0;
  };
  std::vector<StepSpan> steps;        // ProfilerStep spans, in time order
  int64_t memory_events = 0;          // GPU allocator events charged to kernels (traces with profile_memory)
  int64_t static_memory_bytes = 0;    // allocated on the GPU before the first charged event
};

// `rank` is the rank to give the program (distributedInfo.rank, or 0 for a lone trace without one); `et` may be null.
RankImport build_rank_import(const KinetoTrace& k, const ExecutionTrace* et, int rank);

// Kernels launched outside every ProfilerStep window (step < 0) belong to the step of the kernel before them, and
// those before the first known step to it: the one rule by which import consumers (simulate --workload,
// extrapolate, compare) cut a step. Returns false, leaving `steps` as it was, when no kernel has a step.
bool fill_unknown_steps(std::vector<int>& steps);

// The group a collective runs on, guessed from its ranks (docs/TRACES.md): all-to-all -> ep, p2p -> pp, ranks
// consecutive and fewer than the world -> tp, anything else -> dp.
workload::GroupKind guess_group(bool p2p, workload::CollType coll, const std::vector<int>& ranks, int world_size);

}  // namespace stepsim::trace
