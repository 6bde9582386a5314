#include "stepsim/assemble/simulation.hpp"

#include "stepsim/assemble/plausibility.hpp"

#include "stepsim/catalog/efficiency_table.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "stepsim/cost/collective/flow_collectives.hpp"
#include "stepsim/cost/compute/power_limit.hpp"
#include "stepsim/cost/compute/host_issue.hpp"
#include "stepsim/calibrate/nccl_calibration.hpp"
#include "stepsim/cost/collective/nccl_model.hpp"
#include "stepsim/cost/overlap/overlap_coefficients.hpp"
#include "stepsim/cost/overlap/overlap_sm_share.hpp"
#include "stepsim/cost/overlap/learned/xgboost_overlap_model.hpp"
#include "stepsim/calibrate/calibration_store.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/catalog/transport_rates.hpp"
#include "stepsim/sim/flow_contended_network.hpp"
#include "stepsim/assemble/moe_host_note.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"

namespace stepsim::sim {

namespace {

std::string store_path(const CommSettings& settings) {
  return settings.calibration_store.empty() ? hw::default_calibration_store_path() : settings.calibration_store;
}

}  // namespace

std::string nccl_calibration_note(const catalog::Catalog& catalog, const spec::ClusterSpec& cluster,
                                  const CommSettings& settings) {
  if (settings.calibration_store == "none") return "";
  return cost::calibration_note(hw::effective_gpu(catalog.gpus, cluster), cluster, store_path(settings),
                                settings.nccl_version);
}

std::unique_ptr<cost::CollectiveModel> make_collective_model(const catalog::Catalog& catalog, spec::CommModel model,
                                                             const spec::ClusterSpec& written,
                                                             const CommSettings& settings) {
  // Every model sees the inter-node rate the transport reaches; a calibration is keyed by the cluster as written.
  const spec::ClusterSpec cluster = cost::at_transport_rates(catalog.nccl, written);
  switch (model) {
    case spec::CommModel::AlphaBeta: return cost::make_alpha_beta_model(cluster);
    case spec::CommModel::Nccl: {
      if (settings.calibration_store == "none") return cost::make_nccl_model(catalog, cluster, settings.nccl_version);
      const hw::GpuSpec& gpu = hw::effective_gpu(catalog.gpus, cluster);
      const cost::NcclProfile& profile = catalog.nccl.find(gpu);
      return cost::make_nccl_model(
          catalog, cluster, profile,
          cost::calibrated_param_table(gpu, written, profile, store_path(settings), settings.nccl_version),
          settings.nccl_version);
    }
    // Times one collective alone (stepsim comm); a job's step runs on a shared FlowContendedNetwork instead. Its links
    // carry what NCCL reaches, so that it agrees with the nccl model where no link is shared.
    case spec::CommModel::Flow:
      return cost::make_flow_model(cost::at_achievable_rates(catalog.nccl, hw::effective_gpu(catalog.gpus, written),
                                                             written));
  }
  throw InputError(std::string("simulation.comm_model: unknown model '") + spec::name_of(model) + "'");
}

std::unique_ptr<cost::CollectiveModel> make_collective_model(const catalog::Catalog& catalog,
                                                             const spec::JobSpec& job) {
  return make_collective_model(catalog, job.simulation.comm_model, job.cluster,
                               {job.simulation.calibration_store, job.simulation.nccl_version});
}

std::unique_ptr<cost::OverlapModel> make_overlap_model(const catalog::Catalog& catalog, const spec::JobSpec& job,
                                                       std::string* note) {
  switch (job.simulation.overlap_model) {
    case spec::OverlapModel::None: return nullptr;
    case spec::OverlapModel::SmShare: {
      cost::SmShareParams p;
      p.sm_count = hw::effective_gpu(catalog.gpus, job.cluster).sm_count;
      return cost::make_sm_share_overlap_model(p);
    }
    case spec::OverlapModel::Coefficients: {
      const std::string& f = job.simulation.overlap_file;
      return cost::make_coefficient_overlap_model(
          cost::OverlapCoefficients::load(f.empty() ? cost::OverlapCoefficients::default_path() : f));
    }
    case spec::OverlapModel::XGBoost: {
      if (job.simulation.overlap_file.empty())
        throw InputError("simulation.overlap_file: is required with overlap_model xgboost");
      std::string why;
      auto learned = overlap::load_xgboost_overlap_model_if_trained(catalog.gpus, job.simulation.overlap_file, job.cluster.gpu, &why);
      if (learned) return learned;
      // Never leave a job without an overlap model: the coefficients cover every generation Echo measured.
      if (note) *note = why + "; the coefficient overlap model (data/overlap.yaml) is used instead";
      return cost::make_coefficient_overlap_model(cost::OverlapCoefficients::load(cost::OverlapCoefficients::default_path()));
    }
  }
  throw InputError(std::string("simulation.overlap_model: unknown model '") +
                   spec::name_of(job.simulation.overlap_model) + "'");
}

std::string calibration_kind(const spec::JobSpec& job) {
  return job.model.moe && job.model.moe->num_experts > 0 ? "moe" : "dense";
}

// Sustained clock (and the attention scale fitted with it), in order: the job's own value; the newest `calibrate compute` row of the GPU's architecture in
// the calibration store (unless simulation.calibration_store is "none"); data/efficiency.yaml.
namespace {

// The power model's one constant (the static share of a board's power) is estimated, not fitted: where the band's
// runs did not run at the job's power limit, the interval takes in the clocks at the share -/+ its spread. A step
// bound by the tensor cores takes the clock's ratio: measured = predicted x f / f', so the error (predicted -
// measured) / measured moves by f' / f - 1 at each end.
void widen_for_power_model(const spec::JobSpec& job, const hw::GpuSpec& gpu, const cost::EfficiencyTable& table,
                           double f, double band_power_W, ComputeCalibration& cal) {
  const double spread = table.power_static_share_spread;
  if (!cal.interval || spread <= 0 || f >= 1 || band_power_W == job.cluster.power_limit_W) return;
  const double share = table.power_static_share;
  const double faster = cost::power_limited_clock(job.cluster.power_limit_W, gpu.tdp_W, std::max(0.0, share - spread));
  const double slower = cost::power_limited_clock(job.cluster.power_limit_W, gpu.tdp_W, share + spread);
  auto& band = *cal.interval;
  band[0] = (1 + band[0]) * (slower / f) - 1;
  band[1] = (1 + band[1]) * (faster / f) - 1;
  char note[160];
  std::snprintf(note, sizeof note, "; widened for the power model (static share %.2f-%.2f: clock x%.3f-x%.3f)",
                std::max(0.0, share - spread), share + spread, faster, slower);
  cal.source += note;
}

}  // namespace

std::unique_ptr<cost::ComputeModel> make_compute_model(const catalog::Catalog& catalog, const spec::JobSpec& job,
                                                       ComputeCalibration* calibration) {
  const hw::GpuSpec& gpu = hw::effective_gpu(catalog.gpus, job.cluster);
  cost::EfficiencyTable table = catalog.efficiency.resolve(gpu);
  ComputeCalibration cal;
  cal.sustained_clock = table.sustained_clock;
  cal.source = "data/efficiency.yaml";
  bool shipped = true;  // the clock and bands are data/efficiency.yaml's (not the job's, not a store's)
  cal.interval = table.prediction_interval;
  const std::string kind = calibration_kind(job);
  // The band of the job's kind where the calibration has runs of it, else the architecture's over all runs.
  auto take_kind_band = [&](const hw::KindIntervals& bands) {
    cal.interval_kind.clear();
    cal.interval_runs = 0;
    const auto it = bands.find(kind);
    if (it == bands.end() || !cal.interval) return;
    cal.interval = std::array<double, 2>{it->second.low, it->second.high};
    cal.interval_kind = kind;
    cal.interval_runs = it->second.runs;
  };
  take_kind_band(table.prediction_interval_by_kind);
  if (job.simulation.sustained_clock > 0) {
    cal.sustained_clock = job.simulation.sustained_clock;
    cal.source = "job (simulation.sustained_clock)";
    shipped = false;
    cal.interval.reset();  // the shipped residuals do not describe a value the user chose
    cal.interval_kind.clear();
    cal.interval_runs = 0;
  } else if (job.simulation.calibration_store != "none") {
    const std::string path = job.simulation.calibration_store.empty() ? hw::default_calibration_store_path()
                                                                      : job.simulation.calibration_store;
    if (const auto store = hw::CalibrationStore::open_existing(path)) {
      if (const auto row = store->lookup_compute(hw::name_of(gpu.arch))) {
        cal.sustained_clock = row->sustained_clock;
        cal.attention_scale = row->attention_scale;
        cal.source = "store " + path;
        shipped = false;
        cal.interval = std::array<double, 2>{row->interval_low, row->interval_high};
        take_kind_band(row->kind_intervals);
      }
    }
  }
  double band_power_W = 0;  // the power limit the band's runs ran at (0: the board's default)
  // A framework other than Megatron-Core is outside the calibration runs (all Megatron-Core): its runs' band if any.
  if (job.training.framework != spec::Framework::MegatronCore && cal.interval) {
    const auto it = table.prediction_interval_by_framework.find(spec::name_of(job.training.framework));
    if (it != table.prediction_interval_by_framework.end()) {
      // Widened to hold the prediction itself: a band of skewed errors must not exclude the point it is around.
      cal.interval = std::array<double, 2>{std::min(it->second.low, 0.0), std::max(it->second.high, 0.0)};
      cal.interval_kind = it->first;
      cal.interval_runs = it->second.runs;
      band_power_W = it->second.power_limit_W;
    }
  }
  // The shipped calibration's runs come from a few sources; a user's job is from another: its interval holds at
  // least the spread of every development source's errors (a store's calibration is the user's own runs).
  if (cal.interval && shipped && table.new_source_interval) {
    const hw::NewSourceInterval& g = *table.new_source_interval;
    auto& band = *cal.interval;
    if (g.low < band[0] || g.high > band[1]) {
      band = {std::min(band[0], g.low), std::max(band[1], g.high)};
      cal.interval_sources = g.sources;
    }
  }
  // The job's attention scale wins over the store's (it is a property of the user's kernels, not of the clock).
  if (job.simulation.attention_scale > 0) cal.attention_scale = job.simulation.attention_scale;
  if (cal.attention_scale != 1.0) {
    char note[96];
    std::snprintf(note, sizeof note, "; attention kernels x%.2f%s", cal.attention_scale,
                  job.simulation.attention_scale > 0 ? " (simulation.attention_scale)" : "");
    cal.source += note;
  }
  table.sustained_clock = cal.sustained_clock;
  // A power limit below the board's default lowers the tensor-core clock the calibration (at the default) saw; a
  // clock the job sets itself is the clock at its own power.
  if (job.cluster.power_limit_W > 0) {
    char note[160];
    if (job.simulation.sustained_clock > 0) {
      std::snprintf(note, sizeof note, "; %.0f W power limit not applied (simulation.sustained_clock is the clock at it)",
                    job.cluster.power_limit_W);
    } else {
      const double f = cost::power_limited_clock(job.cluster.power_limit_W, gpu.tdp_W, table.power_static_share);
      table.sustained_clock *= f;
      std::snprintf(note, sizeof note, "; %.0f W power limit (default %.0f W): tensor-core clock x%.3f",
                    job.cluster.power_limit_W, gpu.tdp_W, f);
      cal.source += note;
      widen_for_power_model(job, gpu, table, f, band_power_W, cal);
      note[0] = '\0';
    }
    cal.source += note;
  }
  if (job.training.cuda_graphs) table.launch_gap_us = 0;  // graph replay: no host issue between kernels
  if (job.cluster.host_to_device_GBps > 0) table.host_to_device_GBps = job.cluster.host_to_device_GBps;
  if (job.cluster.cpu_optimizer_GBps > 0) table.cpu_optimizer_GBps = job.cluster.cpu_optimizer_GBps;
  // torchtitan's attention is PyTorch's SDPA: with its FlashAttention-2 backend, that kernel's own rate.
  if (job.training.framework == spec::Framework::Torchtitan && job.training.sdpa_flash &&
      (table.sdpa_flash_forward != table.attention_forward || table.sdpa_flash_backward != table.attention_backward)) {
    table.attention_forward = table.sdpa_flash_forward;
    table.attention_backward = table.sdpa_flash_backward;
    cal.source += "; attention as PyTorch's FlashAttention-2 runs on this GPU (training.sdpa_backend: flash)";
  }
  table.attention_forward = std::min(1.0, table.attention_forward * cal.attention_scale);
  table.attention_backward = std::min(1.0, table.attention_backward * cal.attention_scale);
  if (calibration) *calibration = cal;
  // The fp8 GEMMs of the mxfp8 recipe are block-scaled kernels with their own rate.
  if (job.training.precision == spec::Precision::Fp8 && job.training.fp8_recipe == spec::Fp8Recipe::Mxfp8) {
    auto& scale = table.gemm_precision_scale;
    scale[static_cast<int>(spec::Precision::Fp8)] = scale[cost::kMxfp8GemmScale];
  }
  return cost::make_roofline_model(gpu, job.training.precision, table);
}

double host_time_scale(const catalog::Catalog& catalog, const spec::JobSpec& job) {
  if (job.training.cuda_graphs) return 0;  // graph replay: the host issues a whole graph at once
  if (job.simulation.host_time_scale >= 0) return job.simulation.host_time_scale;
  return catalog.efficiency.resolve(hw::effective_gpu(catalog.gpus, job.cluster)).host_time_scale;
}

workload::Workload timed_workload(const catalog::Catalog& catalog, const spec::JobSpec& job,
                                  ComputeCalibration* calibration) {
  workload::Workload w = workload::build_megatron_workload(job);
  const auto compute = make_compute_model(catalog, job, calibration);
  assign_compute_durations(w, *compute);
  cost::assign_host_issue(w, host_time_scale(catalog, job));
  return w;
}

Simulation run_simulation(const catalog::Catalog& catalog, const spec::JobSpec& job,
                          const std::vector<int>& record_ranks, const ProgressFn& progress) {
  ComputeCalibration cal;
  workload::Workload w = timed_workload(catalog, job, &cal);
  const std::optional<HostBoundMoe> host_bound = host_bound_moe(w, host_time_scale(catalog, job));
  Simulation s = run_workload(catalog, std::move(w), record_ranks, progress);
  s.calibration = cal;
  if (host_bound) {
    s.notes.push_back(host_bound_moe_note(*host_bound));
    s.host_bound_extra_s = host_bound->extra_s;
  }
  for (std::string& n : plausibility_notes(job, hw::effective_gpu(catalog.gpus, job.cluster))) {
    s.notes.push_back(std::move(n));
  }
  for (std::string& n : cost::transport_notes(catalog.nccl, job.cluster)) s.notes.push_back(std::move(n));
  if (job.simulation.comm_model == spec::CommModel::Nccl) {
    std::string note;
    catalog.nccl_tuner.for_version(job.simulation.nccl_version, "simulation.nccl_version", &note);
    if (!note.empty()) s.notes.push_back(note);
    const std::string calibration =
        nccl_calibration_note(catalog, job.cluster, {job.simulation.calibration_store, job.simulation.nccl_version});
    if (!calibration.empty()) s.notes.push_back(calibration);
  }
  // A multi-node NVLink domain (GB200 NVL72: 18 trays of 4 GPUs) is one node to NCCL. A job whose node is smaller sends
  // every group larger than that node over the NICs: say so.
  const hw::GpuSpec& gpu = hw::effective_gpu(catalog.gpus, job.cluster);
  if (job.cluster.nvlink_domain == 0 && job.cluster.gpus_per_node < gpu.nvlink_domain_gpus &&
      job.cluster.num_gpus > job.cluster.gpus_per_node) {
    s.notes.push_back(gpu.name + " with cluster.gpus_per_node " + std::to_string(job.cluster.gpus_per_node) +
                      ": traffic between these nodes goes over the NICs. Its NVLink domain spans " +
                      std::to_string(gpu.nvlink_domain_gpus) + " GPUs (GB200 NVL72): set cluster.nvlink_domain to the "
                      "domain's size (72, or 36 for NVL36) unless the nodes are separate NVLink domains (GB200 NVL4 "
                      "boards); docs/NETWORK.md");
  }
  return s;
}

namespace {

// Every op of a recorded rank is kept as a span (about 85 bytes of memory and 250 bytes of Chrome trace each): 4,096
// ranks of the 8,192-GPU example (35.6 M ops) took 2.9 GiB and wrote a 9 GiB trace. Refused before the simulation.
void check_recorded_ops(const workload::Workload& w, const std::vector<int>& record_ranks) {
  const std::set<int> ranks(record_ranks.begin(), record_ranks.end());
  int64_t ops = 0;
  for (int r : ranks) ops += static_cast<int64_t>(w.program_of_rank(r).ops.size());
  if (ops <= kMaxRecordedOps) return;
  const int64_t per_rank = std::max<int64_t>(1, ops / static_cast<int64_t>(ranks.size()));
  throw InputError("--trace-ranks: the " + std::to_string(ranks.size()) + " ranks recorded issue " +
                   std::to_string(ops) + " ops in a step, above the " + std::to_string(kMaxRecordedOps) +
                   " a trace or memory series may hold (about " + std::to_string(kMaxRecordedOps / per_rank) +
                   " ranks of this job): record fewer");
}

}  // namespace

Simulation run_workload(const catalog::Catalog& catalog, workload::Workload w, const std::vector<int>& record_ranks,
                        const ProgressFn& progress) {
  Simulation s;
  s.workload = std::move(w);
  const spec::JobSpec& job = s.workload.job;
  const hw::GpuSpec& gpu = hw::effective_gpu(catalog.gpus, job.cluster);
  s.gpu = gpu;
  s.inter_node_efficiency = cost::transport_bandwidth_efficiency(catalog.nccl, job.cluster);
  const auto comm = make_collective_model(catalog, job);
  std::string overlap_note;
  const auto overlap = make_overlap_model(catalog, job, &overlap_note);
  if (!overlap_note.empty()) s.notes.push_back(overlap_note);
  check_recorded_ops(s.workload, record_ranks);
  EngineOptions opt;
  opt.record_ranks = record_ranks;
  opt.overlap = overlap.get();
  opt.peak_flops = gpu.peak_flops(job.training.precision);
  opt.hbm_Bps = gpu.hbm_bandwidth_Bps;
  opt.all_ranks = job.simulation.all_ranks;
  opt.progress = progress;
  // comm_model flow: collectives and send/recv of the whole step share one network and contend for its links.
  std::unique_ptr<FlowContendedNetwork> network;
  if (job.simulation.comm_model == spec::CommModel::Flow) {
    network = std::make_unique<FlowContendedNetwork>(
        hw::build_topology(cost::at_achievable_rates(catalog.nccl, gpu, job.cluster)));
    opt.network = network.get();
  }
  try {
    s.result = simulate(s.workload, *comm, opt);
  } catch (const InputError& e) {
    // The flow network finds some impossibilities only while it runs (photonic port limits): name the job.
    const std::string msg = e.what();
    if (job.source.empty() || msg.rfind(job.source, 0) == 0) throw;
    throw InputError(job.source + ": " + msg);
  }
  return s;
}

}  // namespace stepsim::sim
