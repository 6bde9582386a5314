#include "stepsim/api/simulate.hpp"
#include "stepsim/io/utf8.hpp"

#include <algorithm>

#include "stepsim/api/dump_job.hpp"
#include "stepsim/api/output_file.hpp"
#include "stepsim/report/chrome_trace.hpp"
#include "stepsim/report/html_report.hpp"
#include "stepsim/report/memory_series.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/job/rank_list.hpp"
#include "stepsim/ingest/trace/trace_workload.hpp"
#include "stepsim/ingest/trace/workload_dir.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::api {

namespace {

sim::Simulation run_traced(const SimulateOptions& o, const spec::JobSpec& job, const std::vector<int>& record,
                           TraceRunInfo& info) {
  trace::WorkloadReadOptions ro;
  if (o.step >= 0) ro.step = o.step;
  std::vector<trace::TracedRank> ranks = trace::read_workload_dir(o.workload_dir, ro);
  // The reported rank's measured step; a rank that reuses a peer's trace compares with the first measured one.
  for (const auto& r : ranks) {
    if (r.rank == o.rank && r.measured_step_s) info.measured_step_s = r.measured_step_s;
  }
  for (const auto& r : ranks) {
    if (!info.measured_step_s && r.measured_step_s) info.measured_step_s = r.measured_step_s;
  }
  trace::TraceWorkload tw = trace::build_trace_workload(job, std::move(ranks), {!o.no_host_gaps});
  info.traced = tw.traced;
  info.world = job.cluster.num_gpus;
  info.host_gap_ops = tw.host_gap_ops;
  info.measured_comm_ops = tw.measured_comm_ops;
  try {
    return sim::run_workload(catalog::shipped(), std::move(tw.workload), record);
  } catch (const sim::DeadlockError& e) {
    // The matching checks passed, but the order of the traced calls cannot complete (both peers receiving first).
    throw InputError(o.workload_dir + ": the traced communication cannot complete in this order (" + e.what() + ")");
  }
}

// The ops recorded for one rank per stage.
double stage_ops_estimate(const spec::JobSpec& job) {
  return workload::estimated_ops_per_rank(job) * job.parallelism.pipeline;
}
// Recording them is cheap well below the recorded-ops limit; a step larger still gives rank 0's breakdown alone.
constexpr double kStageRecordOps = static_cast<double>(sim::kMaxRecordedOps) / 4;

}  // namespace

SimulateOutput simulate(const SimulateOptions& o) {
  spec::JobSpec job = load_job(o.job);
  const int world = job.cluster.num_gpus;
  if (o.rank < 0 || o.rank >= world) {
    throw InputError("--rank " + std::to_string(o.rank) + ": must be in 0.." + std::to_string(world - 1));
  }
  std::vector<int> record{o.rank};
  if (!o.trace_path.empty() || !o.memory_csv.empty() || !o.report_path.empty() || o.record_stages) {
    if (!o.trace_ranks.empty()) {
      for (int r : spec::parse_rank_list(o.trace_ranks, world, "--trace-ranks")) record.push_back(r);
    } else {
      // Default: one rank per pipeline stage (tp = cp = dp = 0), enough to see the schedule.
      const int stride = job.parallelism.tensor * job.parallelism.context * job.parallelism.data;
      for (int st = 0; st < job.parallelism.pipeline; ++st) record.push_back(st * stride);
    }
  } else if (!o.trace_ranks.empty()) {
    throw InputError("--trace-ranks needs --trace OUT.trace.json or --memory-csv OUT.csv");
  } else if (job.parallelism.pipeline > 1 && o.workload_dir.empty() && stage_ops_estimate(job) < kStageRecordOps) {
    // One rank per stage for the summary's per-stage times (the bottleneck of an uneven pipeline).
    const int stride = job.parallelism.tensor * job.parallelism.context * job.parallelism.data;
    for (int st = 1; st < job.parallelism.pipeline; ++st) record.push_back(st * stride);
  }
  if (o.step < -1) throw InputError("--step " + std::to_string(o.step) + ": must be a ProfilerStep number >= 0");
  if (o.workload_dir.empty() && (o.step >= 0 || o.no_host_gaps)) {
    throw InputError(std::string(o.step >= 0 ? "--step" : "--no-host-gaps") + " needs --workload DIR");
  }
  SimulateOutput out;
  out.sim = o.workload_dir.empty() ? sim::run_simulation(catalog::shipped(), job, record, o.progress)
                                   : run_traced(o, job, record, out.trace_info);
  const TraceRunInfo& info = out.trace_info;
  report::Summary& sum = out.summary;
  sum = report::summarize(out.sim, o.rank);
  if (job.plan.any()) {
    sum.notes.push_back("the job's plan section (the search's framework and constraints) is read by stepsim plan "
                        "only");
  }
  if (!o.workload_dir.empty() &&
      std::all_of(sum.per_stage.begin(), sum.per_stage.end(), [](const auto& m) { return m.peak_bytes == 0; })) {
    sum.notes.push_back("memory: the traced programs carry no allocations (Kineto [memory] events are not read and "
                        "trace extrapolate models none), so the memory table reads 0 B; it is not a prediction");
  }
  out.json = report::to_json(sum, out.sim.workload.job);
  if (!o.workload_dir.empty()) {
    const double sim_s = sum.step_time_s;
    nlohmann::json wj = {{"dir", o.workload_dir}, {"traced_ranks", info.traced},
                         {"reused_ranks", info.world - info.traced}, {"host_gap_ops", info.host_gap_ops},
                         {"measured_comm_ops", info.measured_comm_ops},
                         {"host_gaps", !o.no_host_gaps}, {"measured_step_s", nullptr}, {"error", nullptr}};
    if (info.measured_step_s && *info.measured_step_s > 0) {
      wj["measured_step_s"] = *info.measured_step_s;
      wj["error"] = (sim_s - *info.measured_step_s) / *info.measured_step_s;
    }
    out.json["workload"] = wj;
  }
  return out;
}

void write_outputs(const SimulateOptions& o, const SimulateOutput& out) {
  if (!o.json_path.empty()) write_output_file(o.json_path, io::json_text(out.json, 2) + "\n", "summary JSON");
  if (!o.dump_job_path.empty()) write_output_file(o.dump_job_path, resolved_job_yaml(o.job), "--dump-job");
  if (!o.trace_path.empty()) report::write_chrome_trace_file(o.trace_path, out.sim);
  if (!o.memory_csv.empty()) report::write_memory_csv_file(o.memory_csv, out.sim);
  if (!o.report_path.empty()) {
    write_output_file(o.report_path, report::simulate_report_html(out.sim, out.summary, out.json), "--report");
  }
}

void check_fit(const SimulateOptions& o, const SimulateOutput& out) {
  // Outputs are written either way (the user asked what it would take); require_fit makes the verdict an error.
  if (o.require_fit && out.summary.oom) {
    throw InputError(out.sim.workload.job.source + ": does not fit: peak " +
                     report::format_bytes(static_cast<double>(out.summary.peak_bytes_max)) + " of " +
                     report::format_bytes(static_cast<double>(out.summary.capacity_bytes)) + " per GPU (--require-fit)");
  }
}

}  // namespace stepsim::api
