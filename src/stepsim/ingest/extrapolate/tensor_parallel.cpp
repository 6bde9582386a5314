#include "stepsim/ingest/extrapolate/tensor_parallel.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::extrapolate {

using workload::Phase;

namespace {

// The last kernel of `phase` computing for layer op `node`; -1 when it ran none.
int last_op(const SourceStep& s, int node, Phase phase) {
  int last = -1;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (s.ops[i].phase == phase && s.ops[i].layer_node == node) last = static_cast<int>(i);
  }
  return last;
}

uint64_t to_bytes(double b) { return static_cast<uint64_t>(std::llround(std::max(0.0, b))); }

}  // namespace

TpPlan plan_tensor_parallel(const SourceStep& s, int tp, const Resize& batch) {
  TpPlan p;
  if (tp <= 1) return p;
  auto node = [&](int n) -> const trace::EtNode& { return s.et.nodes[static_cast<size_t>(n)]; };
  auto add = [&](int after, workload::CollType c, double bytes, const std::string& name) {
    if (after >= 0 && bytes > 0) p.collectives.push_back({after, c, to_bytes(bytes), name});
  };
  auto lone = [&](int n) {
    add(last_op(s, n, Phase::Forward), workload::CollType::AllGather, first_tensor_bytes(node(n), false, batch),
        "tp all_gather (output of " + node(n).name + ")");
    add(last_op(s, n, Phase::Backward), workload::CollType::AllReduce, first_tensor_bytes(node(n), true, batch),
        "tp all_reduce (input gradient of " + node(n).name + ")");
    ++p.lone;
  };
  int column = -1;
  for (const Layer& l : s.layers) {
    if (l.node < 0 || last_op(s, l.node, Phase::Forward) < 0) continue;
    p.split_layers.insert(l.node);
    const OpFamily fam = family_of(node(l.node).name);
    if (fam == OpFamily::Matmul) {
      const double in = first_tensor_bytes(node(l.node), true), out = column >= 0 ? first_tensor_bytes(node(column), false) : -1;
      if (column >= 0 && in == out && in > 0) {
        add(last_op(s, l.node, Phase::Forward), workload::CollType::AllReduce, first_tensor_bytes(node(l.node), false, batch),
            "tp all_reduce (row-parallel output of " + node(l.node).name + ")");
        add(last_op(s, column, Phase::Backward), workload::CollType::AllReduce, first_tensor_bytes(node(column), true, batch),
            "tp all_reduce (column-parallel input gradient of " + node(column).name + ")");
        ++p.pairs;
        column = -1;
        continue;
      }
      if (column >= 0) lone(column);
      column = l.node;
      continue;
    }
    if (column >= 0) lone(column), column = -1;
    if (fam == OpFamily::Embedding) {
      add(last_op(s, l.node, Phase::Forward), workload::CollType::AllReduce, first_tensor_bytes(node(l.node), false, batch),
          "tp all_reduce (vocabulary-parallel output of " + node(l.node).name + ")");
      ++p.embeddings;
    } else {
      lone(l.node);
    }
  }
  if (column >= 0) lone(column);
  std::stable_sort(p.collectives.begin(), p.collectives.end(),
                   [](const TpCollective& a, const TpCollective& b) { return a.after_op < b.after_op; });
  return p;
}

}  // namespace stepsim::extrapolate
