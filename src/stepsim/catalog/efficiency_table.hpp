#pragma once
// Achievable-efficiency tables for the roofline compute model, read from data/efficiency.yaml
// (docs/COST-MODELS.md gives every number's source). The file has `defaults`, per-architecture tables
// (`archs`) and optional per-GPU overrides (`gpus`); a GPU's table is defaults <- arch <- GPU override.
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/catalog/gemm_waves.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/catalog/prediction_interval.hpp"
#include "stepsim/job/job_spec.hpp"

namespace stepsim::cost {

// One point of an attention shape curve: a multiplier of the attention efficiency at a sequence length (key/value
// tokens one kernel walks) or a head dimension; interpolated linearly in log2(x), flat beyond both ends.
struct ShapePoint {
  double x = 0;       // tokens or head dimension (> 0)
  double factor = 0;  // in (0, 1]
};

// GEMM rate scales: one per spec::Precision, then the mxfp8 recipe's block-scaled fp8.
inline constexpr int kMxfp8GemmScale = 5;
inline constexpr int kGemmScales = 6;

// Memory-side efficiencies (fraction of the datasheet HBM bandwidth).
enum class MemoryClass : int { Stream = 0, Elementwise, Norm, Embedding, Loss, Optimizer, ScatterAdd, kCount };

// The resolved table of one GPU: every field set and validated.
struct EfficiencyTable {
  GemmWaves gemm_waves;                           // GEMM time from tiles and waves
  // Indexed by spec::Precision (fp32, fp16, bf16, fp8, nvfp4), then kMxfp8GemmScale: the fp8 GEMMs of the mxfp8
  // recipe (32-element block scales), whose kernels run below per-tensor fp8's.
  std::array<double, kGemmScales> gemm_precision_scale{};
  double grouped_gemm_scale = 0;                  // grouped (MoE) GEMM vs a dense GEMM of the per-expert shape
  double attention_forward = 0;                   // flash attention, forward (and recompute) kernels
  double attention_backward = 0;                  // flash attention, backward kernels
  // PyTorch SDPA's own FlashAttention-2 kernels (torchtitan under training.sdpa_backend: flash), where they run below
  // the kernels above (Blackwell: FA2's sm80 code); otherwise the figures above.
  double sdpa_flash_forward = 0, sdpa_flash_backward = 0;
  // Flash attention's efficiency by shape, relative to the figures above (which hold at the curves' factor 1: long
  // sequences, head dimension 128). Empty = factor 1 everywhere.
  std::vector<ShapePoint> attention_sequence;     // by key/value tokens per kernel
  std::vector<ShapePoint> attention_head_dim;     // by head dimension
  std::array<double, static_cast<int>(MemoryClass::kCount)> memory{};
  double kernel_floor_us = 0;                     // shortest kernel duration
  // Idle time before every kernel when the host issues kernels one by one (eager PyTorch), beyond what a CUDA graph's
  // back-to-back launches leave: added to each compute op's duration. 0 under CUDA graphs (training.cuda_graphs).
  double launch_gap_us = 0;
  // Host issue model (cost/host_issue.hpp): the training host's speed in issuing eager ops relative to the machine the
  // per-layer host times were measured on; 0 = not modelled. The job's simulation.host_time_scale overrides it.
  double host_time_scale = 0;
  double host_to_device_GBps = 0;                 // PCIe rate for Offload ops, GB/s
  // Host-DRAM traffic one rank's CPU optimizer step sustains while every GPU of the node steps at once, GB/s.
  double cpu_optimizer_GBps = 0;
  // Fraction of the datasheet tensor-core rate sustained in a training job (power-limited clocks, the model's real
  // shapes vs the microbenchmark's best): multiplies the GEMM and attention efficiencies. Fitted per architecture by
  // `stepsim calibrate compute` on measured runs; 1 = the microbenchmark curves as they are.
  double sustained_clock = 1.0;
  // Share of the board's default power that does not scale with the SM clock under a GEMM load (leakage, HBM, board):
  // the power model's one constant (cost/compute/power_limit.hpp).
  double power_static_share = 0;
  // How far the static share may be from that value (it is estimated, not fitted): a power-limited job's interval
  // takes the clocks at share -/+ this spread in, where its band's runs did not run at the job's limit.
  double power_static_share_spread = 0;
  // Signed relative errors (predicted - measured) / measured bounding 80% of the calibration runs of this
  // architecture (10th and 90th percentile), for the step-time prediction interval; absent = not calibrated.
  std::optional<std::array<double, 2>> prediction_interval;
  // The same per kind of job ("dense", "moe"), from that kind's calibration runs (hw/prediction_interval.hpp); a
  // kind without an entry takes prediction_interval.
  hw::KindIntervals prediction_interval_by_kind;
  // The same per training framework other than Megatron-Core ("torchtitan"), from that framework's runs: the
  // calibration runs are Megatron-Core's, so a job of another framework takes its framework's band where there is one.
  hw::KindIntervals prediction_interval_by_framework;
  // What a run from a source never seen can expect (hw::NewSourceInterval); absent = no widening.
  std::optional<hw::NewSourceInterval> new_source_interval;

  // Product of the two attention shape factors (1 where a curve is empty or an argument is <= 0).
  double attention_shape_factor(double kv_tokens, double head_dim) const;
  double memory_efficiency(MemoryClass c) const { return memory[static_cast<int>(c)]; }
};

class EfficiencyCatalog {
 public:
  // Parses and validates the file. Throws InputError naming the file and the key on any bad input.
  static EfficiencyCatalog load(const std::string& path);

  // defaults <- archs[gpu.arch] <- gpus[gpu.name]. InputError when the arch has no table.
  EfficiencyTable resolve(const hw::GpuSpec& gpu) const;
  // defaults <- archs[arch] (for tests and tools).
  EfficiencyTable resolve_arch(const std::string& arch) const;
  std::vector<std::string> archs() const;
  const std::string& path() const { return path_; }

  struct Partial;  // a table with optional fields (defined in the .cpp)

 private:
  std::string path_;
  std::shared_ptr<const Partial> defaults_;
  std::map<std::string, std::shared_ptr<const Partial>> archs_;
  std::map<std::string, std::shared_ptr<const Partial>> gpus_;  // normalized GPU name -> override
};

}  // namespace stepsim::cost
