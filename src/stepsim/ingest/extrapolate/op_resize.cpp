#include "stepsim/ingest/extrapolate/op_resize.hpp"

#include <cmath>
#include <map>

namespace stepsim::extrapolate {

std::vector<OpSample> samples_of(const SourceStep& s) {
  std::map<int, double> ns;  // node -> summed kernel time, ordered by node index for determinism
  for (const SourceOp& op : s.ops) {
    if (op.node >= 0) ns[op.node] += static_cast<double>(op.duration_ns);
  }
  std::vector<OpSample> out;
  for (const auto& [node, t] : ns) {
    const trace::EtNode& n = s.et.nodes[static_cast<size_t>(node)];
    const OpFeatures f = features_of(n);
    if (f.known) out.push_back({n.name, f.flops, f.bytes, t});
  }
  return out;
}

Resized resize_ops(const SourceStep& s, const OpRegression& reg, const Resize& batch, int tp,
                   const std::set<int>& split_layers) {
  Resized r;
  for (const SourceOp& op : s.ops) {
    int64_t d = op.duration_ns;
    const trace::EtNode* n = op.node >= 0 ? &s.et.nodes[static_cast<size_t>(op.node)] : nullptr;
    const OpFeatures before = n ? features_of(*n) : OpFeatures{};
    if (n && before.known) {
      Resize z = batch;
      if (tp > 1 && split_layers.count(op.layer_node) && family_of(n->name) != OpFamily::Other) z.split = tp;
      const OpFeatures after = features_of(*n, z);
      const double f = reg.scale(n->name, before.flops, before.bytes, after.flops, after.bytes);
      d = static_cast<int64_t>(std::llround(static_cast<double>(op.duration_ns) * f));
      if (d != op.duration_ns) ++r.rescaled;
    } else if (batch.batch_ratio != 1.0 || tp > 1) {
      ++r.kept;
    }
    r.duration_ns.push_back(std::max<int64_t>(d, op.duration_ns > 0 ? 1 : 0));
  }
  return r;
}

}  // namespace stepsim::extrapolate
