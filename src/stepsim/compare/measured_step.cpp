#include "stepsim/compare/measured_step.hpp"

#include <algorithm>
#include <unordered_map>

#include "stepsim/compare/op_type.hpp"
#include "stepsim/compare/json_text.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/trace_program.hpp"

namespace stepsim::compare {
namespace {

// The step of every kernel, cut as `stepsim simulate --workload` cuts a step from an import.
std::vector<int> kernel_steps(const trace::KinetoTrace& k) {
  std::vector<int> s;
  s.reserve(k.kernels.size());
  for (const trace::Kernel& kn : k.kernels) s.push_back(kn.step);
  trace::fill_unknown_steps(s);
  return s;
}

}  // namespace

StepTrace measured_step(const trace::KinetoTrace& k, std::optional<int64_t> step, int rank) {
  StepTrace t;
  t.path = k.path;
  t.format = "kineto";
  t.rank = rank;
  if (k.kernels.empty()) throw InputError(k.path + ": no GPU kernels (cat \"kernel\"): an empty step");
  const std::vector<int> steps = kernel_steps(k);
  const bool has_steps = steps.front() >= 0;
  if (step && !has_steps)
    throw InputError(k.path + ": --step " + std::to_string(*step) +
                     ": the trace launches no kernel inside a ProfilerStep");
  int64_t chosen = -1;
  if (has_steps) {
    chosen = step ? *step : *std::max_element(steps.begin(), steps.end());
    auto span = std::find_if(k.steps.begin(), k.steps.end(),
                             [&](const trace::ProfilerStep& s) { return s.number == chosen; });
    if (span == k.steps.end() || std::find(steps.begin(), steps.end(), chosen) == steps.end()) {
      std::string have;
      for (const trace::ProfilerStep& s : k.steps) have += (have.empty() ? "" : ", ") + std::to_string(s.number);
      throw InputError(k.path + ": --step " + std::to_string(chosen) + ": no ProfilerStep#" + std::to_string(chosen) +
                       " with kernels (ProfilerSteps: " + have + ")");
    }
    t.label = "ProfilerStep#" + std::to_string(chosen);
    t.begin_ns = span->start_ns;
    t.end_ns = span->start_ns + span->dur_ns;
  } else {
    t.label = "all kernels";
    t.begin_ns = INT64_MAX;
    t.end_ns = INT64_MIN;
  }

  // The importer's classification of every kernel (compute category, collective, p2p), index for index.
  const trace::RankImport imp = trace::build_rank_import(k, nullptr, rank);
  std::unordered_map<uint32_t, uint32_t> name_ids;
  for (size_t i = 0; i < k.kernels.size(); ++i) {
    if (steps[i] != chosen) continue;
    const trace::Kernel& kn = k.kernels[i];
    const trace::ImportedOp& op = imp.ops[i];
    GpuEvent e;
    auto [it, added] = name_ids.try_emplace(kn.name, static_cast<uint32_t>(t.names.size()));
    if (added) t.names.push_back(k.names[kn.name]);
    e.name = it->second;
    e.type = type_of(op.kind, op.category, op.coll);
    e.tid = kn.stream;
    e.start_ns = kn.start_ns;
    e.dur_ns = kn.dur_ns;
    e.args = "\"stream\":" + std::to_string(kn.stream) + ",\"correlation\":" + std::to_string(kn.correlation);
    if (op.kind != workload::OpKind::Compute) {
      e.args += ",\"collective\":" + quoted(op.collective);
      if (op.bytes >= 0) e.args += ",\"bytes\":" + std::to_string(op.bytes);
    }
    t.threads[kn.stream] = "stream " + std::to_string(kn.stream);
    if (!has_steps) {
      t.begin_ns = std::min(t.begin_ns, e.start_ns);
      t.end_ns = std::max(t.end_ns, e.end_ns());
    }
    t.events.push_back(std::move(e));
  }
  if (t.events.empty()) throw InputError(k.path + ": " + t.label + " launched no GPU kernel: an empty step");
  return t;
}

}  // namespace stepsim::compare
