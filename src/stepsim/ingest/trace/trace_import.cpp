#include "stepsim/ingest/trace/trace_import.hpp"

#include <algorithm>
#include <map>

#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/import_output.hpp"
#include "stepsim/ingest/trace/trace_document.hpp"

namespace stepsim::trace {

std::vector<RankImport> import_traces(const std::vector<std::string>& paths, const ProgressFn& progress) {
  std::vector<KinetoTrace> kineto;
  std::vector<ExecutionTrace> ets;
  const auto n = static_cast<int64_t>(paths.size());
  for (const std::string& p : paths) {
    if (progress) progress("reading traces", static_cast<int64_t>(kineto.size() + ets.size()), n);
    TraceDocument d = read_trace_document(p, min_imported_op_bytes());
    if (d.format == TraceFormat::Kineto) kineto.push_back(std::move(d.kineto));
    else ets.push_back(std::move(d.execution));
  }
  if (kineto.empty())
    throw InputError((paths.empty() ? std::string("trace import") : paths.front()) +
                     ": no Kineto (PyTorch profiler) trace among the inputs; an execution trace alone has no kernel times");

  // A trace with no GPU kernel has nothing to replay (an empty traceEvents, a profile taken without CUDA activity):
  // importing it as a rank of 0 kernels would simulate a step of nothing.
  for (const KinetoTrace& k : kineto) {
    if (k.kernels.empty()) {
      throw InputError(k.path + ": no GPU kernel events (cat \"kernel\") in the trace; profile with "
                       "ProfilerActivity.CUDA to record them");
    }
  }

  std::vector<int> rank(kineto.size());
  std::map<int, size_t> by_rank;
  for (size_t i = 0; i < kineto.size(); ++i) {
    if (kineto[i].rank < 0 && kineto.size() > 1)
      throw InputError(kineto[i].path + ": no distributedInfo.rank, needed to import several traces");
    rank[i] = std::max(0, kineto[i].rank);
    auto [it, added] = by_rank.emplace(rank[i], i);
    if (!added)
      throw InputError(kineto[i].path + ": rank " + std::to_string(rank[i]) + " was already given by " +
                       kineto[it->second].path + " (one trace per rank)");
  }

  std::vector<const ExecutionTrace*> et_of(kineto.size(), nullptr);
  for (const ExecutionTrace& et : ets) {
    int match = -1;
    for (size_t i = 0; i < kineto.size(); ++i) {
      if (kineto[i].cpu_pid != et.pid || et.pid < 0) continue;
      if (match >= 0)
        throw InputError(et.path + ": pid " + std::to_string(et.pid) + " matches both " + kineto[match].path +
                         " and " + kineto[i].path);
      match = static_cast<int>(i);
    }
    if (match < 0)
      throw InputError(et.path + ": the execution trace's pid " + std::to_string(et.pid) +
                       " is the CPU pid of no Kineto trace given");
    if (et_of[match])
      throw InputError(et.path + ": a second execution trace for " + kineto[match].path);
    et_of[match] = &et;
  }

  if (progress) progress("reading traces", n, n);
  std::vector<RankImport> out;
  for (const auto& [r, i] : by_rank) out.push_back(build_rank_import(kineto[i], et_of[i], r));
  return out;
}

}  // namespace stepsim::trace
