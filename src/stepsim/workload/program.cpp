#include "stepsim/workload/program.hpp"

#include <stdexcept>

namespace stepsim::workload {

uint16_t ProgramBuilder::intern(const std::string& name) {
  auto it = name_ids_.find(name);
  if (it != name_ids_.end()) return it->second;
  if (p_.names.size() >= 65535) throw std::runtime_error("too many distinct op names in a program");
  const auto id = static_cast<uint16_t>(p_.names.size());
  p_.names.push_back(name);
  name_ids_.emplace(name, id);
  return id;
}

ProgramBuilder::Ref ProgramBuilder::emit(Op op, const std::string& name, std::initializer_list<Ref> deps) {
  return emit(std::move(op), name, std::vector<Ref>(deps));
}

ProgramBuilder::Ref ProgramBuilder::emit(Op op, const std::string& name, const std::vector<Ref>& deps) {
  op.name = intern(name);
  op.wait_begin = static_cast<uint32_t>(p_.waits.size());
  uint16_t n = 0;
  for (const Ref& r : deps) {
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

}  // namespace stepsim::workload
