#pragma once
// Files `stepsim trace import` writes: DIR/rank<r>.json (one program per rank) and DIR/summary.json.
// Formats: docs/TRACES.md.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/ingest/trace/trace_program.hpp"

namespace stepsim::trace {

// Streams the program JSON (no DOM: a program of millions of kernels is written in one pass).
void write_rank_program(const RankImport& r, std::ostream& out);
// {"ranks": [{rank, kernels, nccl_kernels, compute_busy_s, step_time_s}, ...]} in rank order.
nlohmann::json summary_json(const std::vector<RankImport>& ranks);
// The fewest bytes one op takes in a rank file `trace import` writes (a compute op with every number 0 and the shortest
// category's name, and the separator): the floor by which a trace's kernel count bounds its rank file from below.
uintmax_t min_imported_op_bytes();
// Creates `dir` and writes every rank's program and the summary; InputError naming the path it cannot write.
void write_import(const std::vector<RankImport>& ranks, const std::string& dir);

}  // namespace stepsim::trace
