#pragma once
// One call from a validated job to a simulated step: builds the Megatron workload, picks the cost
// models the job asks for, fills compute times and runs the engine. Every factory reads the shipped constants from
// the catalog it is given (catalog/catalog.hpp), never from a global.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/job/job_spec.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::sim {

// Where the compute model's calibration comes from and the step-time error it implies.
struct ComputeCalibration {
  double sustained_clock = 1;
  double attention_scale = 1;  // on the architecture's attention-kernel efficiencies
  std::string source;  // "job (simulation.sustained_clock)", "store <path>", "data/efficiency.yaml"
  // Signed relative errors of the calibration runs (10th, 90th percentile); absent when not calibrated.
  std::optional<std::array<double, 2>> interval;
  // Whose errors: the calibration runs of the job's kind (calibration_kind), `interval_runs` of them; 0 = every run
  // of the architecture (a calibration that does not tell kinds apart, or none of this kind).
  std::string interval_kind;
  int interval_runs = 0;
  // Sources whose equally weighted errors the interval was widened to hold (data/efficiency.yaml's
  // new_source_interval, for the shipped calibration); 0 = not widened.
  int interval_sources = 0;
};

// "moe" for a model with routed experts, else "dense": the kind of job whose calibration runs bound its error.
std::string calibration_kind(const spec::JobSpec& job);

struct Simulation {
  workload::Workload workload;
  hw::GpuSpec gpu;  // the catalog's entry of the job's GPU
  SimResult result;
  ComputeCalibration calibration;  // of the compute model that timed the step (job-built workloads)
  std::vector<std::string> notes;  // what the user should know about how it was simulated (fallbacks)
  double inter_node_efficiency = 1;  // the fraction of the NICs' line rate the transport reaches (transport_rates.hpp)
  // Host-bound MoE layers: how much longer the step would take with the measuring machine's host than at the job's
  // host speed (0 = not host-bound; moe_host_note.hpp). Not in result.step_ns; the summary's interval reaches up to it.
  double host_bound_extra_s = 0;
};

// Where the NCCL model's parameters come from (simulation.calibration_store, simulation.nccl_version).
struct CommSettings {
  std::string calibration_store;  // "": the default store ($STEPSIM_CALIBRATION_DB, else ~/.cache/stepsim/...);
                                  // "none": the profile in data/nccl.yaml only; else a store file
  std::string nccl_version;       // prefer stored rows of this version ("" = newest)
};

// The collective model a job asks for (simulation.comm_model), built for its cluster.
std::unique_ptr<cost::CollectiveModel> make_collective_model(const catalog::Catalog& catalog, spec::CommModel model,
                                                             const spec::ClusterSpec& cluster,
                                                             const CommSettings& settings = {});
std::unique_ptr<cost::CollectiveModel> make_collective_model(const catalog::Catalog& catalog,
                                                             const spec::JobSpec& job);
// The note that the calibration store changes the nccl model's parameters for `cluster` (which store and rows); ""
// when it does not (no such rows, no store, or calibration_store none).
std::string nccl_calibration_note(const catalog::Catalog& catalog, const spec::ClusterSpec& cluster,
                                  const CommSettings& settings);

// The roofline compute model of the job's GPU and precision, with the job's sustained-clock override if any.
std::unique_ptr<cost::ComputeModel> make_compute_model(const catalog::Catalog& catalog, const spec::JobSpec& job,
                                                       ComputeCalibration* calibration = nullptr);

// The overlap model a job asks for (simulation.overlap_model, overlap_file); null for none.
// `note` (when given) receives what the caller should tell the user: a learned model that does not know the job's
// GPU falls back to the coefficient model (data/overlap.yaml, Echo's published slowdowns, every generation).
std::unique_ptr<cost::OverlapModel> make_overlap_model(const catalog::Catalog& catalog, const spec::JobSpec& job,
                                                       std::string* note = nullptr);

// The job's Megatron workload with every compute op timed by the job's compute model, before the engine runs it
// (what `stepsim trace export-chakra` writes out).
workload::Workload timed_workload(const catalog::Catalog& catalog, const spec::JobSpec& job,
                                  ComputeCalibration* calibration = nullptr);
// The host issue model's speed for a job (cost/host_issue.hpp): 0 under CUDA graphs, else simulation.host_time_scale,
// else the GPU architecture's in data/efficiency.yaml (0 = not modelled).
double host_time_scale(const catalog::Catalog& catalog, const spec::JobSpec& job);

// The most ops the recorded ranks may issue in a step together (their spans are kept: about 350 MiB of memory and a
// 1 GB Chrome trace at 4 M): more is an InputError naming how many ranks fit.
constexpr int64_t kMaxRecordedOps = int64_t{1} << 22;

// record_ranks: ranks whose timelines are kept (trace, breakdown); their ops at most kMaxRecordedOps.
// progress: the engine's ("simulating"), for a big job's progress bar.
Simulation run_simulation(const catalog::Catalog& catalog, const spec::JobSpec& job,
                          const std::vector<int>& record_ranks, const ProgressFn& progress = {});

// Runs a workload whose compute durations are already set (a traced one: measured) on its job's cluster, with the
// job's communication and overlap models.
Simulation run_workload(const catalog::Catalog& catalog, workload::Workload w, const std::vector<int>& record_ranks,
                        const ProgressFn& progress = {});

}  // namespace stepsim::sim
