#pragma once
// The ex-situ tracer's rank<r>.workload.json (docs/TRACER.md) as a TracedRank: the profiled ops' timeline cut at
// each recorded communication call into compute pieces (CPU time on a CPU run, the ops' kernel time on a GPU run),
// the calls themselves as collectives and P2P batches, and the gaps between top-level ops as host gaps.
#include <string>

#include "stepsim/ingest/trace/traced_rank.hpp"
#include "stepsim/ingest/trace/workload_json.hpp"

namespace stepsim::trace {

TracedRank parse_tracer_workload(const JsonField& root, const std::string& path);

}  // namespace stepsim::trace
