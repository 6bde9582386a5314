#pragma once
// `stepsim trace import`: read every file (Kineto traces and execution traces, plain or .gz, told apart by
// content), pair each execution trace with the Kineto trace of the same process id, and build one program per
// rank (the rank from distributedInfo.rank). Files are read one after another, so memory holds one file's text
// at a time plus the compact events kept from each.
#include <string>
#include <vector>

#include "stepsim/io/progress.hpp"
#include "stepsim/ingest/trace/trace_program.hpp"

namespace stepsim::trace {

// InputError (naming the file) for unreadable or malformed files, two traces of one rank, several Kineto traces
// without distributedInfo.rank, or an execution trace whose pid matches no Kineto trace. Result in rank order.
// progress: "reading traces", files read of those given.
std::vector<RankImport> import_traces(const std::vector<std::string>& paths, const ProgressFn& progress = {});

}  // namespace stepsim::trace
