// Files of `stepsim trace extrapolate` (rank<r>.json in the stepsim-trace-program format with explicit `after`,
// summary.json, extrapolation.json) and its printed report.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stepsim/io/utf8.hpp"
#include "stepsim/ingest/extrapolate/extrapolate.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/traced_program_json.hpp"

namespace stepsim::extrapolate {

using nlohmann::json;
using workload::OpKind;

namespace {

json nullable(double v, bool ok) { return ok ? json(v) : json(nullptr); }

void write_text(const std::string& path, const std::string& text) { trace::write_output_text(path, text); }

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

json fit_json(const OpRegression& reg) {
  json a = json::array();
  for (const TypeFit& f : reg.types()) {
    a.push_back({{"type", f.type},
                 {"n", f.n},
                 {"distinct_points", f.distinct},
                 {"model", f.linear ? "linear" : "proportional"},
                 {"ns_per_flop", nullable(f.ns_per_flop, f.linear)},
                 {"ns_per_byte", nullable(f.ns_per_byte, f.linear)},
                 {"fixed_ns", nullable(f.fixed_ns, f.linear)},
                 {"r2", nullable(f.r2, f.linear)},
                 {"mape", nullable(f.mape, f.linear)}});
  }
  return a;
}

}  // namespace

void write_extrapolation(const Extrapolation& x, const spec::JobSpec& job, const Options& opt, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir + ": cannot create the output folder (--out): " + ec.message());
  const int world = x.plan.layout.world();
  json summary_ranks = json::array();
  trace::RankFileBudget budget(dir);
  for (size_t i = 0; i < x.roles.size(); ++i) {
    trace::TracedRank r;
    r.rank = x.roles[i];
    r.world_size = world;
    r.ops = x.programs[i];
    int64_t compute = 0, comm = 0;
    double busy_ns = 0;
    for (const trace::TracedOp& o : r.ops) {
      if (o.kind == OpKind::Compute && o.category != workload::ComputeCategory::Host) ++compute, busy_ns += o.duration_ns;
      else if (o.kind != OpKind::Compute) ++comm;
    }
    const json prog = trace::traced_program_json(
        r, opt.trace, {{"execution_trace", opt.et.empty() ? json(nullptr) : json(opt.et)}, {"extrapolated", true}});
    trace::write_rank_file(dir + "/rank" + std::to_string(x.roles[i]) + ".json", io::json_text(prog) + "\n", &budget);
    summary_ranks.push_back({{"rank", x.roles[i]}, {"kernels", compute}, {"nccl_kernels", comm},
                             {"compute_busy_s", busy_ns * 1e-9}, {"step_time_s", nullptr}});
  }
  // step_time_s stays null: the source's measured step is a single GPU's, not the extrapolated job's.
  const json summary = {{"ranks", summary_ranks},
                        {"source_step_time_s", x.source.measured_step_s ? json(*x.source.measured_step_s) : json(nullptr)}};
  write_text(dir + "/summary.json", io::json_text(summary, 2) + "\n");
  budget.commit();

  const SourceStep& s = x.source;
  json buckets = json::array();
  for (size_t st = 0; st < x.plan.buckets.size(); ++st) {
    for (const Bucket& b : x.plan.buckets[st])
      buckets.push_back({{"stage", st}, {"bytes", b.bytes}, {"gradients", b.gradients}, {"ready_after_op", b.ready_op}});
  }
  json stages = json::array();
  for (size_t st = 0; st < x.stages.size(); ++st) {
    stages.push_back({{"layers", {x.stages[st].first, x.stages[st].second}},
                      {"forward_ns", x.stage_forward_ns[st]},
                      {"backward_ns", x.stage_backward_ns[st]},
                      {"boundary_bytes", st < x.plan.boundary_bytes.size() ? json(x.plan.boundary_bytes[st]) : json(nullptr)}});
  }
  json tp = json::array();
  for (const TpCollective& c : x.tp.collectives)
    tp.push_back({{"after_op", c.after_op}, {"coll", workload::name_of(c.coll)}, {"bytes", c.bytes}, {"name", c.name}});
  int64_t gap_ns = 0, grad_bytes = 0;
  for (const SourceOp& op : s.ops) gap_ns += op.gap_ns;
  for (const Gradient& g : s.gradients) grad_bytes += g.bytes;
  const json out = {
      {"format", "stepsim-extrapolation"},
      {"version", 1},
      {"source",
       {{"trace", opt.trace},
        {"execution_trace", opt.et.empty() ? json(nullptr) : json(opt.et)},
        {"profiler_step", s.step},
        {"measured_step_s", s.measured_step_s ? json(*s.measured_step_s) : json(nullptr)},
        {"compute_kernels", s.ops.size()},
        {"linked_to_et", s.linked_ops},
        {"dropped_comm_kernels", s.dropped_comm},
        {"dropped_all_reduce_bytes", s.dropped_all_reduce_bytes},
        {"host_gap_ns", gap_ns},
        {"layers", s.layers.size()},
        {"gradient_source", s.gradient_source},
        {"gradient_bytes", grad_bytes}}},
      {"fit", fit_json(x.regression)},
      {"generated",
       {{"world_size", x.plan.layout.world()},
        {"data", x.plan.layout.data()},
        {"tensor", x.plan.layout.tensor()},
        {"pipeline", x.plan.layout.pipeline()},
        {"micro_batch_size", job.training.micro_batch_size},
        {"trace_batch", opt.trace_batch > 0 ? json(opt.trace_batch) : json(nullptr)},
        {"batch_ratio", x.batch_ratio},
        {"micro_batches", x.plan.micro_batches},
        {"schedule", x.plan.one_f_one_b ? "1f1b" : "gpipe"},
        {"dp_overlap", opt.dp_overlap == DpOverlap::After ? "after" : "backward"},
        {"bucket_bytes", static_cast<uint64_t>(std::llround(opt.bucket_mb * 1024 * 1024))},
        {"buckets", buckets},
        {"tp_collectives", tp},
        {"tp_pairs", x.tp.pairs},
        {"tp_lone_layers", x.tp.lone},
        {"stages", stages},
        {"kernels_rescaled", x.rescaled},
        {"kernels_kept", x.kept},
        {"host_gaps", x.plan.host_gaps},
        {"programs", x.roles}}}};
  write_text(dir + "/extrapolation.json", io::json_text(out, 2) + "\n");
}

std::string report_text(const Extrapolation& x, const Options& opt, const std::string& dir) {
  const SourceStep& s = x.source;
  const auto& L = x.plan.layout;
  std::ostringstream o;
  o << "# stepsim trace extrapolate: " << opt.trace << (opt.et.empty() ? "" : " + " + opt.et) << " -> " << dir << "\n";
  o << "# source: " << s.ops.size() << " compute kernels";
  if (s.step >= 0) o << " of ProfilerStep#" << s.step;
  if (s.measured_step_s) o << " (step " << fixed(*s.measured_step_s * 1e3, 3) << " ms measured)";
  o << ", " << s.linked_ops << " linked to ET ops, " << s.layers.size() << " layer(s), " << s.dropped_comm
    << " communication kernel(s) dropped\n";
  o << "# job: data " << L.data() << ", tensor " << L.tensor() << ", pipeline " << L.pipeline() << " ("
    << L.world() << " GPUs); " << x.plan.micro_batches << " micro-batch(es), batch ratio " << fixed(x.batch_ratio, 3)
    << "; " << x.rescaled << " kernel(s) resized, " << x.kept << " kept (no shapes)\n";
  o << "# fit per op type: t = a*FLOPs + b*bytes + c (least squares, a, b, c >= 0); proportional below 3 distinct points\n";
  // The type column is as wide as the longest op name (fbgemm's run past 50 characters).
  int width = 28;
  for (const TypeFit& f : x.regression.types()) width = std::max(width, static_cast<int>(std::min<size_t>(f.type.size(), 120)));
  char head[256];
  std::snprintf(head, sizeof head, "#   %-*s   n  model         a(ns/GFLOP)   b(ns/MB)     c(us)     R2   MAPE%%\n", width, "type");
  o << head;
  for (const TypeFit& f : x.regression.types()) {
    char line[384];
    if (f.linear) {
      std::snprintf(line, sizeof line, "    %-*.*s %3d  linear       %11.2f %10.3f %9.3f %6.3f %7.1f\n", width, width,
                    f.type.c_str(), f.n, f.ns_per_flop * 1e9, f.ns_per_byte * 1e6, f.fixed_ns * 1e-3, f.r2, f.mape * 100);
    } else {
      std::snprintf(line, sizeof line, "    %-*.*s %3d  proportional %11s %10s %9s %6s %7s\n", width, width, f.type.c_str(),
                    f.n, "-", "-", "-", "-", "-");
    }
    o << line;
  }
  if (L.data() > 1) {
    o << "# DP: gradients from " << s.gradient_source << "; all-reduce "
      << (opt.dp_overlap == DpOverlap::After ? "after the backward pass" : "when a bucket's last gradient is ready")
      << "; buckets (bytes):";
    for (const auto& st : x.plan.buckets)
      for (const Bucket& b : st) o << " " << b.bytes;
    o << "\n";
  }
  if (L.tensor() > 1) {
    o << "# TP: " << x.tp.split_layers.size() << " layer(s) split, " << x.tp.pairs << " column/row pair(s), " << x.tp.lone
      << " lone, " << x.tp.collectives.size() << " collective(s) per micro-batch\n";
  }
  if (L.pipeline() > 1) {
    o << "# PP: " << (x.plan.one_f_one_b ? "1F1B" : "GPipe") << ", stages (layers, forward/backward us per micro-batch):";
    for (size_t st = 0; st < x.stages.size(); ++st) {
      o << " [" << x.stages[st].first << "-" << x.stages[st].second << ": " << fixed(x.stage_forward_ns[st] * 1e-3, 1) << "/"
        << fixed(x.stage_backward_ns[st] * 1e-3, 1) << "]";
    }
    o << "\n";
  }
  o << "# wrote " << x.roles.size() << " program(s) (data-parallel peers reuse them) + summary.json, extrapolation.json; "
    << "replay: stepsim simulate JOB --workload " << dir << "\n";
  return o.str();
}

}  // namespace stepsim::extrapolate
