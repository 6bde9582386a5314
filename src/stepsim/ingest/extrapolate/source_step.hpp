#pragma once
// The single-GPU step that extrapolation starts from: the compute kernels of one ProfilerStep of a Kineto trace in
// start order, each with its measured duration, the CPU-bound idle time before it, its pass (forward, backward,
// optimizer and the rest of the step), the layer it belongs to and its execution-trace node; plus the parameter
// gradients the backward pass produces and when. Communication kernels of the trace are dropped (the transforms
// generate their own). Rules: docs/EXTRAPOLATION.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/ingest/trace/execution_trace.hpp"
#include "stepsim/workload/op.hpp"

namespace stepsim::extrapolate {

struct SourceOp {
  std::string name;                 // kernel name
  workload::ComputeCategory category = workload::ComputeCategory::Elementwise;
  workload::Phase phase = workload::Phase::Forward;  // Optimizer: everything after the backward pass
  int64_t duration_ns = 0;
  int64_t gap_ns = 0;               // idle before it that no kernel or dropped all-reduce explains (CPU-bound)
  int node = -1;                    // index into SourceStep::et.nodes; -1 = not linked
  int layer = -1;                   // forward/backward: layer index; optimizer: -1
  int layer_node = -1;              // the layer op (node index) whose forward or backward this kernel computes
};

struct Layer {
  int node = -1;                    // the layer op (aten::linear, aten::conv2d, aten::embedding_bag, ...)
  int gemm_node = -1;               // the innermost op of that layer that ran kernels (aten::addmm under linear)
};

struct Gradient {
  int64_t bytes = 0;
  int ready_op = -1;                // the backward op after which it is ready
};

struct SourceStep {
  std::string trace_path, et_path;
  trace::ExecutionTrace et;         // empty when no execution trace was given
  std::vector<SourceOp> ops;
  std::vector<Layer> layers;        // in forward order; op.layer indexes it
  std::vector<Gradient> gradients;  // in ready order
  std::string gradient_source;      // "execution_trace" (AccumulateGrad nodes), "trace_all_reduces", "none"
  bool gradients_are_buckets = false;  // from the trace's own all-reduces: already DDP's buckets
  int step = -1;                    // ProfilerStep number kept, -1 = the whole trace
  std::optional<double> measured_step_s;
  int linked_ops = 0;
  int dropped_comm = 0;
  int64_t dropped_all_reduce_bytes = 0;
  int64_t seq_node(int64_t seq) const;  // forward node index with this autograd sequence number, -1 if none
  std::vector<std::pair<int64_t, int>> seq_index;  // sorted (seq_id, forward node index)
};

// InputError (exit 2) for unreadable traces, a Kineto trace without kernels, an execution trace that is not the
// trace's process (pid), or a step with no compute kernel.
SourceStep load_source_step(const std::string& trace_path, const std::string& et_path);

}  // namespace stepsim::extrapolate
