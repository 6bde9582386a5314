#include "stepsim/workload/program.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace stepsim::workload {

uint16_t ProgramBuilder::intern(std::string_view name) {
  auto it = name_ids_.find(name);
  if (it != name_ids_.end()) return it->second;
  if (p_.names.size() >= 65535) throw std::runtime_error("too many distinct op names in a program");
  const auto id = static_cast<uint16_t>(p_.names.size());
  p_.names.emplace_back(name);
  name_ids_.emplace(std::string(name), id);
  return id;
}

ProgramBuilder::Ref ProgramBuilder::emit(Op op, std::string_view name, std::initializer_list<Ref> deps) {
  return emit_after(std::move(op), name, deps.begin(), deps.size());
}

ProgramBuilder::Ref ProgramBuilder::emit(Op op, std::string_view name, const std::vector<Ref>& deps) {
  return emit_after(std::move(op), name, deps.data(), deps.size());
}

ProgramBuilder::Ref ProgramBuilder::emit_after(Op op, std::string_view name, const Ref* deps, size_t count) {
  op.name = intern(name);
  op.wait_begin = static_cast<uint32_t>(p_.waits.size());
  uint16_t n = 0;
  for (size_t d = 0; d < count; ++d) {
    const Ref& r = deps[d];
    if (r.stream == op.stream || r.count == 0) continue;  // FIFO covers same-stream order
    // Keep only the strongest wait per stream.
    bool merged = false;
    for (uint32_t i = op.wait_begin; i < p_.waits.size(); ++i) {
      if (p_.waits[i].stream == r.stream) {
        if (r.count > p_.waits[i].count) p_.waits[i].count = r.count;
        merged = true;
      }
    }
    if (!merged) {
      p_.waits.push_back(Wait{r.stream, r.count});
      ++n;
    }
  }
  op.wait_count = n;
  const int s = static_cast<int>(op.stream);
  p_.stream_ops[s].push_back(static_cast<uint32_t>(p_.ops.size()));
  p_.ops.push_back(op);
  return Ref{op.stream, ++counts_[s]};
}

void ProgramBuilder::reorder_since(size_t begin, const std::vector<int64_t>& keys) {
  auto& ops = p_.ops;
  const size_t n = ops.size() - begin;
  if (keys.size() != n) throw std::logic_error("reorder_since: one key per op expected");
  if (n < 2) return;
  // Streams' positions of the reordered ops start at first[s]; a wait on a count beyond it names one of them.
  std::array<size_t, kNumStreams> first{};
  for (int s = 0; s < kNumStreams; ++s) {
    const auto& so = p_.stream_ops[s];
    first[s] = static_cast<size_t>(std::lower_bound(so.begin(), so.end(), static_cast<uint32_t>(begin)) - so.begin());
  }
  std::vector<uint32_t> target(p_.waits.size(), UINT32_MAX);  // waits naming a moved op: that op's old index
  for (size_t i = begin; i < ops.size(); ++i) {
    for (uint32_t w = ops[i].wait_begin; w < ops[i].wait_begin + ops[i].wait_count; ++w) {
      const Wait& wt = p_.waits[w];
      const int s = static_cast<int>(wt.stream);
      if (wt.count > first[s]) target[w] = p_.stream_ops[s][wt.count - 1];
    }
  }
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  std::vector<Op> moved(ops.begin() + static_cast<std::ptrdiff_t>(begin), ops.end());
  std::vector<uint32_t> new_index(n), stream_pos(n);
  for (auto& so : p_.stream_ops) so.resize(first[&so - p_.stream_ops.data()]);
  for (size_t j = 0; j < n; ++j) {
    const uint32_t old = order[j];
    const auto idx = static_cast<uint32_t>(begin + j);
    ops[idx] = moved[old];
    new_index[old] = idx;
    auto& so = p_.stream_ops[static_cast<int>(ops[idx].stream)];
    stream_pos[old] = static_cast<uint32_t>(so.size());
    so.push_back(idx);
  }
  for (size_t i = begin; i < ops.size(); ++i) {
    for (uint32_t w = ops[i].wait_begin; w < ops[i].wait_begin + ops[i].wait_count; ++w) {
      if (target[w] == UINT32_MAX) continue;
      const uint32_t t = target[w] - static_cast<uint32_t>(begin);
      if (new_index[t] >= i) throw std::logic_error("reorder_since: an op would be issued before an op it waits for");
      p_.waits[w].count = stream_pos[t] + 1;
    }
  }
}

}  // namespace stepsim::workload
