// Roofline compute model: an op takes the longer of its compute time at an achievable fraction of the tensor-core
// peak and its memory time at an achievable fraction of HBM bandwidth, never less than the shortest kernel.
// Formulas and numbers: docs/COST-MODELS.md; efficiencies: data/efficiency.yaml.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/catalog/efficiency_table.hpp"

namespace stepsim::cost {
namespace {

using workload::ComputeCategory;

// The op's GEMM shape: its m, n, k where the workload gives them, else a cube of the op's FLOPs per GEMM (a traced
// or imported GEMM that carries only its work).
struct GemmShape {
  double m, n, k, batch;
};
GemmShape gemm_shape(const workload::Op& op) {
  const double batch = std::max<int32_t>(op.gemm_batch, 1);
  if (op.gemm_m > 0 && op.gemm_n > 0 && op.gemm_k > 0)
    return {static_cast<double>(op.gemm_m), static_cast<double>(op.gemm_n), static_cast<double>(op.gemm_k), batch};
  const double side = std::cbrt(std::max(op.flops / batch, 2.0) / 2.0);
  return {side, side, side, batch};
}

class RooflineModel final : public ComputeModel {
 public:
  RooflineModel(const hw::GpuSpec& gpu, spec::Precision precision, EfficiencyTable table)
      : table_(std::move(table)),
        gemm_peak_(gpu.peak_flops(precision)),
        // Transformer Engine runs attention in BF16 even when GEMMs use FP8 or NVFP4 (FP8 attention is opt-in).
        attention_peak_(gpu.peak_flops(spec::quantized_gemms(precision) ? spec::Precision::Bf16 : precision)),
        vector_peak_(gpu.fp32_flops),
        hbm_Bps_(gpu.hbm_bandwidth_Bps),
        precision_scale_(table_.gemm_precision_scale[static_cast<int>(precision)]),
        bf16_scale_(spec::quantized_gemms(precision)
                        ? table_.gemm_precision_scale[static_cast<int>(spec::Precision::Bf16)]
                        : precision_scale_),
        floor_s_(table_.kernel_floor_us * 1e-6),
        gap_s_(table_.launch_gap_us * 1e-6),
        h2d_Bps_(table_.host_to_device_GBps * 1e9),
        cpu_opt_Bps_(table_.cpu_optimizer_GBps * 1e9),
        sm_count_(std::max(gpu.sm_count, 1)),
        tensor_scale_(table_.sustained_clock) {
    if (!(gemm_peak_ > 0) || !(attention_peak_ > 0) || !(vector_peak_ > 0) || !(hbm_Bps_ > 0) || !(h2d_Bps_ > 0) ||
        !(cpu_opt_Bps_ > 0))
      throw std::invalid_argument("roofline model: GPU '" + gpu.name +
                                  "' needs positive peak FLOP/s, HBM and host bandwidth");
  }

  int64_t duration_ns(const workload::Op& op) const override {
    if (!std::isfinite(op.flops) || op.flops < 0)
      throw std::invalid_argument("roofline model: op FLOPs must be finite and >= 0");
    // Host-bound time the workload states itself (a traced CPU gap, a modelled loop of host launches).
    if (op.category == ComputeCategory::Host) return std::max<int64_t>(op.duration_ns, 0);
    if (op.flops == 0 && op.bytes == 0) return 0;
    // Kernels beside userbuffers communication run on the SMs left to them.
    const double share = op.comm_sms > 0 ? std::max(1.0 - static_cast<double>(op.comm_sms) / sm_count_, 0.05) : 1.0;
    // Host-side copies and the CPU optimizer are no kernel launches; every other op is one kernel the host issues.
    const bool kernel = op.category != ComputeCategory::Offload && op.category != ComputeCategory::CpuOptimizer;
    const double t = std::max(seconds(op) / share, floor_s_) + (kernel ? gap_s_ : 0.0);
    return std::max<int64_t>(1, std::llround(t * 1e9));
  }

 private:
  // GEMMs run in the training precision, except those Transformer Engine keeps in bf16 under fp8.
  double peak_of(const workload::Op& op) const { return op.keep_bf16 ? attention_peak_ : gemm_peak_; }
  double scale_of(const workload::Op& op) const { return op.keep_bf16 ? bf16_scale_ : precision_scale_; }

  double memory_time(const workload::Op& op, MemoryClass c) const {
    return static_cast<double>(op.bytes) / (hbm_Bps_ * table_.memory_efficiency(c));
  }

  double seconds(const workload::Op& op) const {
    switch (op.category) {
      case ComputeCategory::Gemm:
      case ComputeCategory::GroupedGemm: {
        // Tiles and waves (gemm_waves.hpp); a grouped GEMM's experts share the waves of one kernel.
        const double scale = scale_of(op) * tensor_scale_ *
                             (op.category == ComputeCategory::GroupedGemm ? table_.grouped_gemm_scale : 1.0);
        const GemmShape g = gemm_shape(op);
        return std::max(gemm_wave_seconds(table_.gemm_waves, g.m, g.n, g.k, g.batch, peak_of(op), sm_count_, scale,
                                          op.category == ComputeCategory::GroupedGemm),
                        memory_time(op, MemoryClass::Stream));
      }
      case ComputeCategory::Attention: {
        // Flash-attention kernels carry their shape: gemm_n = key/value tokens one kernel walks, gemm_k = head dim.
        const double eff =
            (op.phase == workload::Phase::Backward ? table_.attention_backward : table_.attention_forward) *
            table_.attention_shape_factor(static_cast<double>(op.gemm_n), static_cast<double>(op.gemm_k)) * tensor_scale_;
        return std::max(op.flops / (attention_peak_ * eff), memory_time(op, MemoryClass::Stream));
      }
      // Memory-bound kernels: their arithmetic runs on CUDA cores, so the compute roof is the non-tensor FP32
      // rate (not derated: these ops are in this class because they never reach it).
      case ComputeCategory::Elementwise:
        return std::max(op.flops / vector_peak_, memory_time(op, MemoryClass::Elementwise));
      case ComputeCategory::Norm:
        return std::max(op.flops / vector_peak_, memory_time(op, MemoryClass::Norm));
      case ComputeCategory::Embedding:
        return std::max(op.flops / vector_peak_, memory_time(op, MemoryClass::Embedding));
      case ComputeCategory::Loss:
        return std::max(op.flops / vector_peak_, memory_time(op, MemoryClass::Loss));
      case ComputeCategory::Optimizer:
        return std::max(op.flops / vector_peak_, memory_time(op, MemoryClass::Optimizer));
      case ComputeCategory::ScatterAdd:
        return std::max(op.flops / vector_peak_, memory_time(op, MemoryClass::ScatterAdd));
      case ComputeCategory::Offload:
        // A host<->device copy: only the PCIe link matters.
        return static_cast<double>(op.bytes) / h2d_Bps_;
      case ComputeCategory::CpuOptimizer:
        // Adam on the host is bound by host DRAM (four fp32 arrays read, three written per parameter).
        return static_cast<double>(op.bytes) / cpu_opt_Bps_;
      case ComputeCategory::Host:
        return 0.0;  // timed by duration_ns() from the op's own duration
    }
    throw std::invalid_argument("roofline model: unknown compute category");
  }

  EfficiencyTable table_;
  double gemm_peak_;
  double attention_peak_;
  double vector_peak_;
  double hbm_Bps_;
  double precision_scale_;
  double bf16_scale_;
  double floor_s_;
  double gap_s_;  // eager launch gap before each kernel
  double h2d_Bps_;
  double cpu_opt_Bps_;
  int sm_count_;
  double tensor_scale_;  // sustained clock: GEMM and attention kernels
};

}  // namespace

std::unique_ptr<ComputeModel> make_roofline_model(const hw::GpuSpec& gpu, spec::Precision precision,
                                                  const EfficiencyTable& table) {
  return std::make_unique<RooflineModel>(gpu, precision, table);
}

}  // namespace stepsim::cost
