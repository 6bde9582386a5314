#pragma once
// `stepsim trace` as library calls (the CLI's cmd_trace.cpp): real traces (Kineto with execution traces, or Chakra ETs)
// imported as per-rank programs, a job exported as Chakra traces for ASTRA-sim, and one single-GPU trace extrapolated
// to a job's parallel programs (docs/TRACES.md, docs/CHAKRA.md, docs/EXTRAPOLATION.md).
#include <optional>
#include <string>
#include <vector>

#include "stepsim/api/job_input.hpp"
#include "stepsim/ingest/chakra/et_export.hpp"
#include "stepsim/ingest/chakra/et_import.hpp"
#include "stepsim/ingest/extrapolate/extrapolate.hpp"
#include "stepsim/ingest/trace/trace_import.hpp"

namespace stepsim::api {

struct TraceImportOptions {
  std::vector<std::string> traces;  // Kineto traces and execution traces in any order, or Chakra ETs
  std::string out;                  // folder for rank<r>.json and summary.json
  std::string comm_groups;          // Chakra only: the communicator-group file ("" = beside the first trace)
  ProgressFn progress;              // empty: none
};

// Which reader ran decides which of the two is set.
struct TraceImportOutput {
  std::optional<chakra::ChakraImport> chakra;
  std::vector<trace::RankImport> kineto;
};

// Reads the traces and writes the per-rank programs to `out`; InputError for bad input.
TraceImportOutput trace_import(const TraceImportOptions& o);
// The table the CLI prints: one line per rank, and for Chakra the command that replays it.
std::string trace_import_text(const TraceImportOptions& o, const TraceImportOutput& out);

struct ExportChakraOptions {
  JobInput job;
  chakra::ExportOptions files;  // dir and file-name prefix
};

struct ExportChakraOutput {
  spec::JobSpec job;
  chakra::ExportSummary summary;
};

// The job's timed per-rank programs as <name>.<rank>.et and comm_group.json in files.dir.
ExportChakraOutput export_chakra(const ExportChakraOptions& o);
// What was written and the ASTRA-sim command line that reads it.
std::string export_chakra_text(const ExportChakraOptions& o, const ExportChakraOutput& out);

struct ExtrapolateOptions {
  JobInput job;
  extrapolate::Options fit;         // the trace, its execution trace, buckets, stages, trace batch
  std::string out;                  // folder for rank<r>.json, summary.json and extrapolation.json
  std::string dp_overlap = "backward";  // backward | after
  std::string schedule;             // gpipe | 1f1b; "" = the job's parallelism.schedule
};

struct ExtrapolateOutput {
  spec::JobSpec job;
  extrapolate::Options fit;  // as resolved (overlap and schedule applied)
  extrapolate::Extrapolation result;
  std::string json;          // extrapolation.json as written
};

// Fits the trace, generates the job's programs and writes them to `out`; InputError for bad options.
ExtrapolateOutput extrapolate_trace(const ExtrapolateOptions& o);
std::string extrapolate_text(const ExtrapolateOptions& o, const ExtrapolateOutput& out);

}  // namespace stepsim::api
