#include "stepsim/api/trace.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/ingest/trace/import_output.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::api {
namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string chakra_table(const TraceImportOptions& o, const chakra::ChakraImport& c) {
  std::ostringstream s;
  s << "# stepsim trace import: " << c.ranks.size() << " Chakra trace(s) -> " << o.out
    << (c.comm_groups.empty() ? std::string(" (no communicator-group file)") : " (groups: " + c.comm_groups + ")")
    << "\n# rank  nodes  compute_ops  comm_ops  compute_s  cpu_nodes_skipped  other_skipped  source\n";
  for (const auto& r : c.ranks) {
    s << "  " << r.rank.rank << "  " << r.nodes << "  " << r.compute_ops << "  " << r.comm_ops << "  "
      << fixed(r.compute_s, 6) << "  " << r.cpu_nodes_skipped << "  " << r.other_nodes_skipped << "  " << r.rank.path
      << "\n";
  }
  for (const std::string& n : c.notes) s << "# note: " << n << "\n";
  s << "# replay: stepsim simulate JOB --workload " << o.out << "\n";
  return s.str();
}

std::string kineto_table(const TraceImportOptions& o, const std::vector<trace::RankImport>& ranks) {
  std::ostringstream s;
  s << "# stepsim trace import: " << ranks.size() << " rank(s) -> " << o.out << "\n"
    << "# rank  kernels  nccl  compute_busy_s  step_time_s  launches_linked  et_linked  source\n";
  for (const auto& r : ranks) {
    s << "  " << r.rank << "  " << r.kernels << "  " << r.nccl_kernels << "  " << fixed(r.compute_busy_s, 6) << "  "
      << (r.step_time_s ? fixed(*r.step_time_s, 6) : std::string("-")) << "  " << r.launches_found << "  "
      << (r.execution_trace.empty() ? std::string("-") : std::to_string(r.et_linked)) << "  " << r.source << "\n";
  }
  return s.str();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TraceImportOutput trace_import(const TraceImportOptions& o) {
  if (o.traces.empty()) throw InputError("trace import: give at least one trace file");
  TraceImportOutput out;
  if (chakra::looks_like_chakra(o.traces.front())) {
    out.chakra = chakra::import_chakra(o.traces, o.comm_groups, o.progress);
    chakra::write_chakra_import(*out.chakra, o.out);
    return out;
  }
  if (!o.comm_groups.empty()) throw InputError("--comm-groups: applies to Chakra traces (.et or Chakra JSON) only");
  out.kineto = trace::import_traces(o.traces, o.progress);
  trace::write_import(out.kineto, o.out);
  return out;
}

std::string trace_import_text(const TraceImportOptions& o, const TraceImportOutput& out) {
  return out.chakra ? chakra_table(o, *out.chakra) : kineto_table(o, out.kineto);
}

ExportChakraOutput export_chakra(const ExportChakraOptions& o) {
  chakra::check_export_name(o.files.name);  // before the simulation that times the programs
  ExportChakraOutput out{load_job(o.job), {}};
  const workload::Workload w = sim::timed_workload(catalog::shipped(), out.job);
  out.summary = chakra::export_chakra(w, o.files);
  return out;
}

std::string export_chakra_text(const ExportChakraOptions& o, const ExportChakraOutput& out) {
  const chakra::ExportSummary& s = out.summary;
  const std::string& dir = o.files.dir;
  const std::string& name = o.files.name;
  std::ostringstream t;
  t << "stepsim trace export-chakra: " << out.job.model.name << " on " << s.ranks << " ranks -> " << dir << "\n"
    << "  files        " << dir << "/" << name << ".<rank>.et (" << s.ranks << "), "
    << fixed(static_cast<double>(s.bytes) / (1 << 20), 1) << " MiB\n"
    << "  nodes        " << s.nodes << " (" << s.nodes / std::max(1, s.ranks) << " per rank on average)\n"
    << "  groups       " << s.comm_groups << " in " << s.comm_group_file << "\n"
    << "  ASTRA-sim    --workload-configuration=" << dir << "/" << name
    << " --comm-group-configuration=" << s.comm_group_file << "\n"
    << "  back         stepsim trace import " << dir << "/" << name << ".*.et --out DIR; "
    << "stepsim simulate JOB --workload DIR\n";
  return t.str();
}

ExtrapolateOutput extrapolate_trace(const ExtrapolateOptions& o) {
  if (o.dp_overlap != "backward" && o.dp_overlap != "after") throw InputError("--dp-overlap: must be backward or after");
  ExtrapolateOutput out;
  out.fit = o.fit;
  out.fit.dp_overlap = o.dp_overlap == "after" ? extrapolate::DpOverlap::After : extrapolate::DpOverlap::Backward;
  if (!o.schedule.empty()) out.fit.schedule = o.schedule;
  out.job = load_job(o.job);
  out.result = extrapolate::extrapolate(out.job, out.fit);
  extrapolate::write_extrapolation(out.result, out.job, out.fit, o.out);
  out.json = read_text(o.out + "/extrapolation.json");
  return out;
}

std::string extrapolate_text(const ExtrapolateOptions& o, const ExtrapolateOutput& out) {
  return extrapolate::report_text(out.result, out.fit, o.out);
}

}  // namespace stepsim::api
