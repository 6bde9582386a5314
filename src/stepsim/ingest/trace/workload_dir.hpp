#pragma once
// Reading a workload directory for trace-driven simulation (`stepsim simulate JOB --workload DIR`): every
// `rank<r>.json` (stepsim-trace-program: `stepsim trace import`, `stepsim trace extrapolate`) and
// `rank<r>.workload.json` (stepsim.workload: the ex-situ tracer) in DIR, one TracedRank per rank. Formats:
// docs/TRACES.md, docs/TRACER.md; how they are replayed: docs/TRACE-SIMULATION.md.
#include <optional>
#include <string>
#include <vector>

#include "stepsim/ingest/trace/traced_rank.hpp"

namespace stepsim::trace {

struct WorkloadReadOptions {
  std::optional<int> step;  // imported programs spanning several ProfilerSteps: the one to replay (default: last)
};

// One file; the format is told by its "format" key. InputError naming the file and key on bad input.
TracedRank read_traced_rank(const std::string& path, const WorkloadReadOptions& opt = {});
// Parses a file's text (fuzz target entry point); `path` labels errors.
TracedRank parse_traced_rank(const std::string& text, const std::string& path, const WorkloadReadOptions& opt = {});

// Every rank file of DIR, by rank. InputError when DIR holds none, or a rank twice.
std::vector<TracedRank> read_workload_dir(const std::string& dir, const WorkloadReadOptions& opt = {});

}  // namespace stepsim::trace
