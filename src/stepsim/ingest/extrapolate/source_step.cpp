#include "stepsim/ingest/extrapolate/source_step.hpp"

#include <algorithm>
#include <map>

#include "stepsim/ingest/extrapolate/op_features.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/kineto_trace.hpp"
#include "stepsim/ingest/trace/trace_document.hpp"
#include "stepsim/ingest/trace/trace_program.hpp"

namespace stepsim::extrapolate {

using workload::Phase;

namespace {

constexpr int kMaxDepth = 256;  // ancestor walks (a malformed parent cycle must not loop forever)


struct NodeIndex {
  std::map<int64_t, int> by_id;
  int of(int64_t id) const {
    const auto it = by_id.find(id);
    return it == by_id.end() ? -1 : it->second;
  }
};

int parent_of(const trace::ExecutionTrace& et, const NodeIndex& ix, int n) {
  const int64_t p = et.nodes[static_cast<size_t>(n)].parent;
  return p == et.nodes[static_cast<size_t>(n)].id ? -1 : ix.of(p);
}

// Pass of a node from its ancestors: autograd's engine runs the backward, torch.optim records Optimizer.step#...
std::optional<Phase> phase_of(const trace::ExecutionTrace& et, const NodeIndex& ix, int n) {
  for (int d = 0; n >= 0 && d < kMaxDepth; ++d, n = parent_of(et, ix, n)) {
    const std::string& name = et.nodes[static_cast<size_t>(n)].name;
    if (name.starts_with("autograd::engine::evaluate_function") || name.find("Backward") != std::string::npos)
      return Phase::Backward;
    if (name.starts_with("Optimizer.") || name.starts_with("Optimizer#")) return Phase::Optimizer;
  }
  return std::nullopt;
}

// The outermost layer op among the node and its ancestors (aten::linear above its aten::addmm), or -1.
int layer_root(const trace::ExecutionTrace& et, const NodeIndex& ix, int n) {
  int root = -1;
  for (int d = 0; n >= 0 && d < kMaxDepth; ++d, n = parent_of(et, ix, n)) {
    if (is_layer_op(et.nodes[static_cast<size_t>(n)].name)) root = n;
  }
  return root;
}

// Time of [a, b) covered by the union of `spans` (sorted by start).
int64_t covered(const std::vector<std::pair<int64_t, int64_t>>& spans, int64_t a, int64_t b) {
  int64_t total = 0, reach = a;
  for (const auto& [s, e] : spans) {
    const int64_t lo = std::max(s, reach), hi = std::min(e, b);
    if (hi > lo) total += hi - lo, reach = hi;
  }
  return total;
}

}  // namespace

int64_t SourceStep::seq_node(int64_t seq) const {
  const auto it = std::lower_bound(seq_index.begin(), seq_index.end(), std::make_pair(seq, -1));
  return it != seq_index.end() && it->first == seq ? it->second : -1;
}

SourceStep load_source_step(const std::string& trace_path, const std::string& et_path) {
  SourceStep s;
  s.trace_path = trace_path;
  s.et_path = et_path;
  trace::TraceDocument kd = trace::read_trace_document(trace_path);
  if (kd.format != trace::TraceFormat::Kineto)
    throw InputError(trace_path + ": an execution trace where the Kineto (PyTorch profiler) trace was expected; give the ET with --et");
  const trace::KinetoTrace& k = kd.kineto;
  if (!et_path.empty()) {
    s.et = trace::read_execution_trace(et_path);
    if (s.et.pid != k.cpu_pid)
      throw InputError(et_path + ": --et: the execution trace's pid " + std::to_string(s.et.pid) +
                       " is not the CPU pid of " + trace_path + " (" + std::to_string(k.cpu_pid) + "); record both in one run");
  }
  const trace::RankImport imp = trace::build_rank_import(k, et_path.empty() ? nullptr : &s.et, 0);
  if (imp.ops.empty()) throw InputError(trace_path + ": no GPU kernel (cat \"kernel\") to extrapolate from");

  // One ProfilerStep (the last), as `stepsim simulate --workload` replays imports.
  std::vector<int> steps;
  for (const auto& op : imp.ops) steps.push_back(op.step);
  s.step = trace::fill_unknown_steps(steps) ? *std::max_element(steps.begin(), steps.end()) : -1;
  for (const auto& span : imp.steps) {
    if (span.number == s.step) s.measured_step_s = static_cast<double>(span.dur_ns) * 1e-9;
  }

  NodeIndex ix;
  for (size_t i = 0; i < s.et.nodes.size(); ++i) ix.by_id.emplace(s.et.nodes[i].id, static_cast<int>(i));
  std::vector<std::pair<int64_t, int64_t>> all_reduce_spans;
  std::vector<std::pair<int64_t, int>> trace_all_reduces;  // (bytes, compute ops before it)
  std::vector<int64_t> op_node_id;                          // ET node id per kept op, for gradient readiness
  std::vector<int64_t> starts;
  for (size_t i = 0; i < imp.ops.size(); ++i) {
    const trace::ImportedOp& op = imp.ops[i];
    if (steps[i] != s.step) continue;
    if (op.kind != workload::OpKind::Compute) {
      ++s.dropped_comm;
      if (op.kind == workload::OpKind::Collective && op.coll == workload::CollType::AllReduce) {
        all_reduce_spans.emplace_back(op.start_ns, op.start_ns + op.duration_ns);
        if (op.bytes > 0) {
          trace_all_reduces.emplace_back(op.bytes, static_cast<int>(s.ops.size()));
          s.dropped_all_reduce_bytes += op.bytes;
        }
      }
      continue;
    }
    SourceOp so;
    so.name = imp.names[op.name];
    so.category = op.category;
    so.duration_ns = op.duration_ns;
    so.node = op.et_node >= 0 ? ix.of(op.et_node) : -1;
    if (so.node >= 0) ++s.linked_ops;
    op_node_id.push_back(op.et_node);
    starts.push_back(op.start_ns);
    s.ops.push_back(std::move(so));
  }
  if (s.ops.empty()) throw InputError(trace_path + ": ProfilerStep#" + std::to_string(s.step) + " has no compute kernel");
  std::sort(all_reduce_spans.begin(), all_reduce_spans.end());

  // Idle before each kernel: from the latest end of the kernels before it, less what a dropped all-reduce covered
  // (that wait is what the generated all-reduces model).
  int64_t end = starts[0];
  // The ProfilerStep's span is the measured step: the GPU idles from its start until the first kernel (the CPU
  // loads data and launches), which the first op's gap keeps.
  if (!k.kernels.empty()) {
    int64_t t0 = k.kernels.front().start_ns;
    for (const trace::Kernel& kk : k.kernels) t0 = std::min(t0, kk.start_ns);
    for (const trace::ProfilerStep& ps : k.steps) {
      if (ps.number == s.step && ps.start_ns < t0 + starts[0]) end = ps.start_ns - t0;
    }
  }
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (starts[i] > end) s.ops[i].gap_ns = starts[i] - end - covered(all_reduce_spans, end, starts[i]);
    end = std::max(end, starts[i] + s.ops[i].duration_ns);
  }

  // Passes: from the ET ancestors where linked, else the kernel before; forward kernels after the first backward
  // one are the step's tail (optimizer, zero_grad, metrics).
  bool seen_backward = false;
  Phase prev = Phase::Forward;
  for (SourceOp& op : s.ops) {
    std::optional<Phase> ph = op.node >= 0 ? phase_of(s.et, ix, op.node) : std::nullopt;
    if (!ph && op.category == workload::ComputeCategory::Optimizer) ph = Phase::Optimizer;
    Phase p = ph.value_or(prev);
    if (p == Phase::Backward) seen_backward = true;
    else if (p == Phase::Forward && seen_backward) p = Phase::Optimizer;
    op.phase = prev = p;
  }

  // Layers: a forward kernel under a new layer op starts the next layer; backward kernels belong to the layer of
  // the forward op their autograd node was recorded for (same seq_id), else of the backward kernel before them.
  std::map<int, int> layer_of_root;
  std::map<int, int> layer_of_node;
  int cur = 0;
  bool any = false;
  for (SourceOp& op : s.ops) {
    if (op.phase != Phase::Forward) continue;
    const int root = op.node >= 0 ? layer_root(s.et, ix, op.node) : -1;
    if (root >= 0 && !layer_of_root.count(root)) {
      if (any) ++cur;
      layer_of_root[root] = cur;
      if (static_cast<int>(s.layers.size()) <= cur) s.layers.resize(static_cast<size_t>(cur) + 1);
      s.layers[static_cast<size_t>(cur)] = {root, op.node};
    }
    any = true;
    op.layer = cur;
    op.layer_node = root;
    if (op.node >= 0) layer_of_node.emplace(op.node, cur);
  }
  if (s.layers.empty()) s.layers.resize(1);
  for (size_t i = 0; i < s.et.nodes.size(); ++i) {
    if (s.et.nodes[i].seq_id >= 0 && !phase_of(s.et, ix, static_cast<int>(i)))
      s.seq_index.emplace_back(s.et.nodes[i].seq_id, static_cast<int>(i));
  }
  std::sort(s.seq_index.begin(), s.seq_index.end());
  s.seq_index.erase(std::unique(s.seq_index.begin(), s.seq_index.end(),
                                [](const auto& a, const auto& b) { return a.first == b.first; }),
                    s.seq_index.end());
  int back_layer = static_cast<int>(s.layers.size()) - 1;
  for (SourceOp& op : s.ops) {
    if (op.phase != Phase::Backward) continue;
    for (int n = op.node, d = 0; n >= 0 && d < kMaxDepth; ++d, n = parent_of(s.et, ix, n)) {
      const trace::EtNode& node = s.et.nodes[static_cast<size_t>(n)];
      if (node.seq_id < 0 || node.name.find("Backward") == std::string::npos) continue;
      const int64_t fwd = s.seq_node(node.seq_id);
      if (fwd >= 0) op.layer_node = layer_root(s.et, ix, static_cast<int>(fwd));
      const auto it = fwd >= 0 ? layer_of_node.find(static_cast<int>(fwd)) : layer_of_node.end();
      if (it != layer_of_node.end()) back_layer = it->second;
      else if (fwd >= 0) {
        const int root = layer_root(s.et, ix, static_cast<int>(fwd));
        if (layer_of_root.count(root)) back_layer = layer_of_root[root];
      }
      break;
    }
    op.layer = back_layer;
  }

  // Gradients: each torch::autograd::AccumulateGrad node accumulates one parameter's gradient (its input); it is
  // ready after the last backward kernel launched by a node recorded before it.
  int first_backward = -1;
  for (size_t i = 0; i < s.ops.size() && first_backward < 0; ++i) {
    if (s.ops[i].phase == Phase::Backward) first_backward = static_cast<int>(i);
  }
  std::vector<std::pair<int64_t, Gradient>> grads;  // (AccumulateGrad node id, gradient)
  for (const trace::EtNode& n : s.et.nodes) {
    if (n.name != "torch::autograd::AccumulateGrad" || n.inputs.empty()) continue;
    const double bytes = value_bytes(n.inputs[0]);
    if (bytes <= 0) continue;
    int ready = -1;
    for (size_t i = 0; i < s.ops.size(); ++i) {
      if (s.ops[i].phase == Phase::Backward && op_node_id[i] >= 0 && op_node_id[i] < n.id) ready = static_cast<int>(i);
    }
    if (ready < 0) ready = first_backward;  // recorded before any backward kernel: ready at the first
    if (ready >= 0) grads.push_back({n.id, {static_cast<int64_t>(bytes), ready}});
  }
  // Ready order; among gradients ready after the same kernel, the order autograd accumulated them (node id).
  std::sort(grads.begin(), grads.end(), [](const auto& a, const auto& b) {
    return a.second.ready_op != b.second.ready_op ? a.second.ready_op < b.second.ready_op : a.first < b.first;
  });
  for (const auto& g : grads) s.gradients.push_back(g.second);
  if (!s.gradients.empty()) {
    s.gradient_source = "execution_trace";
  } else if (!trace_all_reduces.empty()) {
    s.gradient_source = "trace_all_reduces";
    s.gradients_are_buckets = true;
    for (const auto& [bytes, before] : trace_all_reduces) s.gradients.push_back({bytes, std::max(0, before - 1)});
  } else {
    s.gradient_source = "none";
  }
  return s;
}

}  // namespace stepsim::extrapolate
