#pragma once
// The summary of one simulated step: the JSON contract of docs/ARCHITECTURE.md and a readable text form.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/report/breakdown.hpp"
#include "stepsim/report/memory_fit.hpp"
#include "stepsim/assemble/simulation.hpp"

namespace stepsim::report {

struct StageMemory {
  int stage = 0;
  int64_t peak_bytes = 0;        // max over the stage's ranks, from the engine
  int64_t static_bytes = 0;      // weights + gradients + optimizer + overheads
  int64_t activation_bytes = 0;  // peak - static
  // At the stage's peak, what PyTorch's counters would say: max_memory_allocated (the peak less the CUDA context,
  // NCCL's buffers and the allocator's reserve) and max_memory_reserved (allocated plus the reserve).
  int64_t allocated_bytes = 0;
  int64_t reserved_bytes = 0;
  int64_t stream_pool_bytes = 0;  // of reserved: FSDP2's communication streams' pools (workload::StaticMemory)
  MemoryFit fit = MemoryFit::Fits;
};

// One pipeline stage's step as its first rank (tp = cp = dp = 0) spends it: on an uneven pipeline the stage with the
// least idle time is the one that sets the pace, which rank 0's breakdown does not show.
struct StageTime {
  int stage = 0;
  int layers = 0;
  double busy_s = 0;  // the step less the stage's pipeline bubble / waiting
  Breakdown breakdown;
};

struct Summary;
MemoryFit memory_fit(const Summary& s);  // the step's verdict: out of memory, tight or fits

struct Summary {
  int rank = 0;  // the rank the breakdown and communication figures are for
  double inter_node_efficiency = 1;  // the fraction of the NICs' line rate the job's transport reaches
  double step_time_s = 0, tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0;
  // The dense peak MFU is taken against: the training precision's (fp8's for fp8, fp4's for nvfp4), and bf16's, the
  // usual comparison across precisions.
  double mfu_peak_tflops = 0, bf16_peak_tflops = 0;
  std::string mfu_precision;  // the precision whose peak mfu is against
  // 80% prediction interval of the step time from the compute calibration's residuals: measured = predicted /
  // (1 + error), error between the calibration runs' 10th and 90th percentile. Empty when not calibrated.
  std::optional<std::array<double, 2>> step_time_interval_s;
  // Whose errors the interval is: the calibration runs of the job's kind ("dense", "moe"), so many of them; empty and
  // 0 when it is every run of the architecture.
  std::string interval_kind;
  int interval_runs = 0;
  int interval_sources = 0;  // widened to hold the errors of this many development sources (0: not widened)
  // Host-bound MoE layers: the step with the measuring machine's host (host issue model at speed 1; 0 = not
  // host-bound). The interval's upper end is at least this, since no calibration run was a host-bound MoE step
  // (docs/COST-MODELS.md, "Host issue model").
  double step_time_host_bound_s = 0;
  std::string calibration_source;
  std::vector<std::string> notes;  // how the step was simulated where it differs from what the job asked (fallbacks)
  Breakdown breakdown;
  int64_t peak_bytes_max = 0;
  int peak_stage = 0;  // the stage holding peak_bytes_max
  int64_t capacity_bytes = 0;
  // Out of memory: on some stage what PyTorch allocates, with the CUDA context and NCCL, exceeds the GPU. Tight: none
  // does, but a reserved peak does (report/memory_fit.hpp).
  bool oom = false;
  bool memory_tight = false;
  // The stage with the highest reserved peak: PyTorch's max_memory_allocated and max_memory_reserved there, and the
  // 80% interval of the reserved peak from the framework's measured peaks (empty where none were measured).
  int64_t peak_allocated_bytes_max = 0;
  int64_t peak_reserved_bytes_max = 0;
  std::optional<std::array<double, 2>> reserved_interval_bytes;
  std::string memory_interval_source;
  // Why the peak has no interval (the job's framework has no measured peaks in the development runs); empty with one.
  std::string memory_no_interval;
  std::vector<StageMemory> per_stage;
  // With PP > 1 and every stage's first rank recorded: each stage's time and the busiest (the bottleneck), else empty
  // and -1.
  std::vector<StageTime> stage_times;
  int bottleneck_stage = -1;
  CommBytes comm;
  int ranks = 0;
  uint64_t events = 0;
  int simulated_ranks = 0, mirrored_ranks = 0;  // the engine's run ranks and those copied from a representative
  double wall_s = 0;
};

// What MFU is against where that is not the bf16 peak: " of the fp8 peak (1979 TFLOP/s; 31.0 % of the bf16 peak,
// 990 TFLOP/s)"; "" at bf16's.
std::string mfu_peak_note(const Summary& s);

// `rank` must be one of the ranks the simulation recorded.
Summary summarize(const sim::Simulation& s, int rank);
nlohmann::json to_json(const Summary& s, const spec::JobSpec& job);
std::string to_text(const Summary& s, const spec::JobSpec& job);

// Human-readable quantities with units.
std::string format_bytes(double bytes);    // "12.3 GiB"
std::string format_seconds(double s);      // "1.234 s", "12.3 ms", "45.6 us"

}  // namespace stepsim::report
