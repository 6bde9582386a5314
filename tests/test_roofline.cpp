// Roofline compute model and data/efficiency.yaml: hand-computed cases, monotonicity, strict loading.
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <cmath>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <optional>
#include <functional>
#include <string>

#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/io/csv_table.hpp"
#include "stepsim/catalog/efficiency_table.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace {

using stepsim::InputError;
using stepsim::cost::EfficiencyCatalog;
using stepsim::cost::EfficiencyTable;
using stepsim::cost::make_roofline_model;
using stepsim::cost::MemoryClass;
using stepsim::hw::GpuCatalog;
using stepsim::hw::GpuSpec;
using stepsim::spec::Precision;
using stepsim::workload::ComputeCategory;
using stepsim::workload::Op;
using stepsim::workload::Phase;

Op gemm(int64_t m, int64_t n, int64_t k, int bytes_per_elem = 2) {
  Op op;
  op.category = ComputeCategory::Gemm;
  op.gemm_m = m;
  op.gemm_n = n;
  op.gemm_k = k;
  op.flops = 2.0 * m * n * k;
  op.bytes = static_cast<uint64_t>(bytes_per_elem) * static_cast<uint64_t>(m * k + k * n + m * n);
  return op;
}

Op memory_op(ComputeCategory c, uint64_t bytes, double flops = 0) {
  Op op;
  op.category = c;
  op.bytes = bytes;
  op.flops = flops;
  return op;
}

// A synthetic GPU and table with round numbers, for cases computed by hand.
GpuSpec round_gpu() {
  GpuSpec g;
  g.name = "ROUND";
  g.arch = stepsim::hw::GpuArch::Hopper;
  g.sm_count = 100;
  g.fp32_flops = 10e12;
  g.tf32_flops = 50e12;
  g.fp16_flops = 100e12;
  g.bf16_flops = 100e12;
  g.fp8_flops = 200e12;
  g.hbm_bandwidth_Bps = 1e12;
  return g;
}

EfficiencyTable round_table() {
  EfficiencyTable t;
  // One tile shape, efficiency 0.5, 1 us per wave, 2 us launch, 0.5 us per GEMM of a grouped kernel.
  t.gemm_waves = {{{128, 128}}, 0.5, 1.0, 2.0, 0.5};
  t.gemm_precision_scale = {1.0, 1.0, 1.0, 0.5};
  t.grouped_gemm_scale = 0.5;
  t.attention_forward = 0.4;
  t.attention_backward = 0.2;
  t.memory = {1.0, 0.5, 0.25, 0.5, 0.5, 0.5};  // stream, elementwise, norm, embedding, loss, optimizer
  t.kernel_floor_us = 2;
  t.host_to_device_GBps = 25;
  t.cpu_optimizer_GBps = 20;
  return t;
}

TEST(Roofline, HandComputedCasesOnARoundGpu) {
  const auto model = make_roofline_model(round_gpu(), Precision::Bf16, round_table());
  // GEMM 1024x1024x512: 8 x 8 = 64 tiles of 128x128 on 100 SMs = 1 wave. One SM's rate 100e12 / 100 x 0.5 =
  // 0.5e12 FLOP/s; a tile's main loop 2 x 128 x 128 x 512 / 0.5e12 = 33.554 us, + 1 us per wave + 2 us launch =
  // 36.554 us. Its 4 MiB of bytes take 4.2 us at 1 TB/s: compute-bound.
  EXPECT_EQ(model->duration_ns(gemm(1024, 1024, 512)), 36554);
  // Same GEMM in FP8: peak 200e12, scale 0.5 -> same rate, same time.
  EXPECT_EQ(make_roofline_model(round_gpu(), Precision::Fp8, round_table())->duration_ns(gemm(1024, 1024, 512)),
            36554);
  // 1152 wide: 9 x 9 = 81 tiles, still one wave: the same time (wave quantization). 1280: 100 tiles, one wave.
  // 1408: 11 x 11 = 121 tiles = 2 waves: 2 x 34.554 + 2 = 71.109 us.
  EXPECT_EQ(model->duration_ns(gemm(1152, 1152, 512)), 36554);
  EXPECT_EQ(model->duration_ns(gemm(1280, 1280, 512)), 36554);
  EXPECT_EQ(model->duration_ns(gemm(1408, 1408, 512)), 71109);
  // Norm over 1e8 bytes at 1e12 * 0.25 = 400 us.
  EXPECT_EQ(model->duration_ns(memory_op(ComputeCategory::Norm, 100000000)), 400000);
  // Elementwise with heavy arithmetic: 1e10 FLOPs on 10e12 CUDA-core FLOP/s = 1 ms > 1e6 B / 0.5e12.
  EXPECT_EQ(model->duration_ns(memory_op(ComputeCategory::Elementwise, 1000000, 1e10)), 1000000);
  // Offload of 1 GB at 25 GB/s = 40 ms.
  EXPECT_EQ(model->duration_ns(memory_op(ComputeCategory::Offload, 1000000000)), 40000000);
  // A CPU optimizer step touching 1 GB of host DRAM at 20 GB/s = 50 ms (no GPU roof, no kernel floor needed).
  EXPECT_EQ(model->duration_ns(memory_op(ComputeCategory::CpuOptimizer, 1000000000)), 50000000);
  // Attention 1e12 FLOPs: forward at 0.4 -> 25 ms, backward at 0.2 -> 50 ms, recompute counts as forward.
  Op att;
  att.category = ComputeCategory::Attention;
  att.flops = 1e12;
  att.phase = Phase::Forward;
  EXPECT_EQ(model->duration_ns(att), 25000000);
  att.phase = Phase::Recompute;
  EXPECT_EQ(model->duration_ns(att), 25000000);
  att.phase = Phase::Backward;
  EXPECT_EQ(model->duration_ns(att), 50000000);
  // FP8 keeps attention at the BF16 peak (Transformer Engine runs it in BF16).
  att.phase = Phase::Forward;
  EXPECT_EQ(make_roofline_model(round_gpu(), Precision::Fp8, round_table())->duration_ns(att), 25000000);
  // Without shape curves the op's shape (kv tokens, head dim) changes nothing.
  att.gemm_n = 512;
  att.gemm_k = 64;
  EXPECT_EQ(model->duration_ns(att), 25000000);
  att.gemm_n = att.gemm_k = 0;
  // Grouped GEMM, 4 experts of 1024x1024x512 in one kernel: 4 x 64 = 256 tiles = 3 waves on 100 SMs, at the
  // grouped scale 0.5: a tile 2 x 128 x 128 x 512 / 0.25e12 = 67.109 us + 1 = 68.109 us; 3 x 68.109 + 2 us launch
  // + 4 x 0.5 us per expert = 208.327 us.
  Op grouped = gemm(1024, 1024, 512);
  grouped.category = ComputeCategory::GroupedGemm;
  grouped.gemm_batch = 4;
  grouped.flops *= 4;
  grouped.bytes *= 4;
  EXPECT_EQ(model->duration_ns(grouped), 208327);
  // Without shape fields each GEMM is a cube of flops / gemm_batch / 2 = 2^29: side 2^(29/3) = 812.749, 7 x 7 tiles
  // per expert, 196 in all = 2 waves of 2 x 128 x 128 x 812.749 / 0.25e12 + 1 = 107.529 us; + 2 + 4 x 0.5 = 219.057 us.
  grouped.gemm_m = grouped.gemm_n = grouped.gemm_k = 0;
  EXPECT_EQ(model->duration_ns(grouped), 219057);
}

TEST(Roofline, FloorAndZeroWork) {
  const auto model = make_roofline_model(round_gpu(), Precision::Bf16, round_table());
  EXPECT_EQ(model->duration_ns(Op{}), 0);  // no flops, no bytes
  EXPECT_EQ(model->duration_ns(memory_op(ComputeCategory::Elementwise, 1)), 2000);  // 2 us floor
  // A 1x1x1 GEMM still costs one wave (1 us + a 128x128x1 tile, 0.066 us) and a launch (2 us): above the floor.
  EXPECT_EQ(model->duration_ns(gemm(1, 1, 1)), 3066);
  {  // without a floor
    EfficiencyTable t = round_table();
    t.kernel_floor_us = 0;
    const auto bare = make_roofline_model(round_gpu(), Precision::Bf16, t);
    EXPECT_EQ(bare->duration_ns(memory_op(ComputeCategory::Elementwise, 1)), 1);  // >= 1 ns for any work
    EXPECT_EQ(bare->duration_ns(memory_op(ComputeCategory::Loss, 0, 1)), 1);
  }
  Op bad = gemm(2, 2, 2);
  bad.flops = -1;
  EXPECT_THROW(model->duration_ns(bad), std::invalid_argument);
}

TEST(Roofline, BigGemmOnH100FillsWholeWaves) {
  const GpuSpec& h100 = stepsim::catalog::shipped().gpus.find("H100-SXM");
  EfficiencyTable table = stepsim::catalog::shipped().efficiency.resolve(h100);
  table.sustained_clock = 1.0;  // the tile efficiency was measured at the power limit
  table.launch_gap_us = 0;      // ... replaying CUDA graphs: no eager launch gap
  const auto model = make_roofline_model(h100, Precision::Bf16, table);
  // 8192^3 with 128x256 tiles: 64 x 32 = 2048 tiles = 16 waves on 132 SMs (the last 52 % full). One SM:
  // 989.5e12 / 132 x 0.74 = 5.547e12 FLOP/s; a tile 2 x 128 x 256 x 8192 / 5.547e12 = 96.78 us + 1.5 = 98.28 us;
  // 16 waves + 1.5 us launch = 1,574 us = 699 TFLOP/s (the measurement: 1,600 us, data/measurements/h100-sxm).
  const double tile_s = 2.0 * 128 * 256 * 8192 / (989.5e12 / 132 * table.gemm_waves.efficiency);
  const double expected_ns = (16 * (tile_s + 1.5e-6) + 1.5e-6) * 1e9;
  EXPECT_NEAR(static_cast<double>(model->duration_ns(gemm(8192, 8192, 8192))), expected_ns, 1.0);
  EXPECT_NEAR(expected_ns, 1.574e6, 2e3);
}

TEST(Roofline, TinyGemmCostsOneWaveAndALaunch) {
  const GpuSpec& h100 = stepsim::catalog::shipped().gpus.find("H100-SXM");
  const EfficiencyTable table = stepsim::catalog::shipped().efficiency.resolve(h100);
  const auto model = make_roofline_model(h100, Precision::Bf16, stepsim::catalog::shipped().efficiency.resolve(h100));
  // 64^3: one 64x64 tile, one wave: 1.5 + 1.5 us of overhead, the eager launch gap and 0.11 us of work.
  const double overhead_ns =
      (table.gemm_waves.wave_overhead_us + table.gemm_waves.launch_us + table.launch_gap_us) * 1e3;
  const double work_ns =
      2.0 * 64 * 64 * 64 / (989.5e12 / 132 * table.gemm_waves.efficiency * table.sustained_clock) * 1e9;
  EXPECT_NEAR(static_cast<double>(model->duration_ns(gemm(64, 64, 64))), overhead_ns + work_ns, 1.0);
  EXPECT_LT(work_ns, 0.05 * overhead_ns);
  EXPECT_GE(model->duration_ns(gemm(64, 64, 64)), std::llround(table.kernel_floor_us * 1e3));
  EXPECT_GT(model->duration_ns(gemm(4096, 4096, 4096)), 10 * model->duration_ns(gemm(64, 64, 64)));
}

using stepsim::test::measurements;

// Geometric mean of `model_over_measured(row)` over the rows it gives a value for (nullopt skips a row); `count` gets
// how many it took.
double geomean_ratio(const stepsim::cost::CsvTable& csv,
                     const std::function<std::optional<double>(const stepsim::cost::CsvTable::Row&)>& model_over_measured,
                     int* count) {
  double log_sum = 0;
  int n = 0;
  for (const auto& r : csv.rows) {
    if (const auto x = model_over_measured(r)) {
      log_sum += std::log(*x);
      ++n;
    }
  }
  *count = n;
  return std::exp(log_sum / std::max(n, 1));
}

// Mean |relative error| of a GPU's shipped table (at the clock it was measured at) over a measurement file of
// bench/gpu/measure_kernels.py in data/measurements/<dir>.
double measured_gemm_error(const std::string& gpu, const std::string& dir, const std::string& file,
                           Precision precision, double* worst = nullptr, double* mean_signed = nullptr) {
  const GpuSpec& spec = stepsim::catalog::shipped().gpus.find(gpu);
  EfficiencyTable table = stepsim::catalog::shipped().efficiency.resolve(spec);
  table.sustained_clock = 1.0;
  table.launch_gap_us = 0;  // measured as CUDA-graph replays
  const auto model = make_roofline_model(spec, precision, table);
  const auto csv = measurements(dir, file);
  const int cm = csv.column("m"), cn = csv.column("n"), ck = csv.column("k"), ct = csv.column("time_us");
  EXPECT_TRUE(cm >= 0 && cn >= 0 && ck >= 0 && ct >= 0) << file;
  EXPECT_TRUE(csv.bad_lines.empty()) << file;
  double sum = 0, sum_signed = 0, max_err = 0;
  for (const auto& r : csv.rows) {
    const Op op = gemm(std::stoll(r.fields[cm]), std::stoll(r.fields[cn]), std::stoll(r.fields[ck]),
                       precision == Precision::Fp8 ? 1 : 2);
    const double err = model->duration_ns(op) / (std::stod(r.fields[ct]) * 1e3) - 1;
    sum += std::abs(err);
    sum_signed += err;
    max_err = std::max(max_err, std::abs(err));
  }
  const double n = csv.rows.empty() ? 1.0 : static_cast<double>(csv.rows.size());
  if (worst) *worst = max_err;
  if (mean_signed) *mean_signed = sum_signed / n;
  return csv.rows.empty() ? 1.0 : sum / n;
}

double h100_measured_error(const std::string& file, Precision precision, double* worst = nullptr) {
  return measured_gemm_error("H100-SXM", "h100-sxm", file, precision, worst);
}

TEST(Roofline, GemmWavesFollowTheH100Measurements) {
  // Measured on one H100 SXM at the power limit (data/measurements/h100-sxm/README.md); the fit is
  // scripts/fit-gemm-waves. The FLOP-indexed curve this model replaced was 10.7 % off at its best level.
  double worst = 0;
  const double layers = h100_measured_error("gemm.csv", Precision::Bf16, &worst);  // 948 layer GEMMs
  EXPECT_LT(layers, 0.04);
  EXPECT_LT(worst, 0.45);
  EXPECT_LT(h100_measured_error("gemm_sweep.csv", Precision::Bf16), 0.05);  // one dimension in steps of 128
  EXPECT_LT(h100_measured_error("gemm_fp8.csv", Precision::Fp8), 0.07);     // 407 fp8 GEMMs
}

TEST(Roofline, GemmWavesPredictTheH200TheyWereNotFittedOn) {
  // The same 1,121 bf16 and 407 fp8 GEMMs measured on one H200 (data/measurements/h200-sxm/README.md, the H100's
  // script and shapes). Nothing in data/efficiency.yaml was fitted to them: the H200 takes Hopper's gemm_waves, fitted
  // on the H100, and its catalog entry (132 SMs, 989.5 TFLOP/s bf16). scripts/fit-gemm-waves on this folder fits
  // 0.72 / 1.0 us / 2.0 us, against the shipped 0.74 / 1.5 / 1.5: the shipped table is 3.9 % off, 1.2 % fast.
  double worst = 0, signed_error = 0;
  const double layers = measured_gemm_error("H200", "h200-sxm", "gemm.csv", Precision::Bf16, &worst, &signed_error);
  EXPECT_LT(layers, 0.05);
  EXPECT_LT(std::abs(signed_error), 0.03);
  EXPECT_LT(worst, 0.45);
  EXPECT_LT(measured_gemm_error("H200", "h200-sxm", "gemm_sweep.csv", Precision::Bf16), 0.06);
  EXPECT_LT(measured_gemm_error("H200", "h200-sxm", "gemm_fp8.csv", Precision::Fp8), 0.08);
}

TEST(Roofline, H200MemoryClassesFollowItsMeasuredKernels) {
  // The H200's memory-bound fractions (data/efficiency.yaml gpus.H200, from scripts/scale-memory-efficiency) against
  // its measured kernels: each row's model time = the kernel's fewest bytes / (4.8 TB/s x the class's fraction),
  // compared with the measured time in data/measurements/h200-sxm/membound.csv (norms, AdamW) and moe_ops.csv (the MoE
  // atomics) and cross_entropy.csv (the loss). Hopper's defaults alone (the H100's fractions at 4.8 TB/s) would be fast
  // on these: norms by 7 %, AdamW by 8 %, the loss by 17 %, the atomics by 23 % (geometric means).
  const GpuSpec& h200 = stepsim::catalog::shipped().gpus.find("H200");
  const EfficiencyTable table = stepsim::catalog::shipped().efficiency.resolve(h200);
  const EfficiencyTable hopper = stepsim::test::shipped_efficiency("H100-SXM");
  const double bw = h200.hbm_bandwidth_Bps;
  // Norms and AdamW: the kernel's fewest bytes at the class's fraction over its measured time, rows by name prefix.
  const auto membound = measurements("h200-sxm", "membound.csv");
  const int ck = membound.column("kernel"), ct = membound.column("time_us"), cb = membound.column("bytes");
  ASSERT_TRUE(ck >= 0 && ct >= 0 && cb >= 0);
  auto kernels_ratio = [&](const std::vector<std::string>& prefixes, double fraction) {
    int n = 0;
    const double r = geomean_ratio(membound, [&](const auto& row) -> std::optional<double> {
      for (const auto& p : prefixes) {
        if (row.fields[ck].rfind(p, 0) == 0)
          return std::stod(row.fields[cb]) / (bw * fraction) / (std::stod(row.fields[ct]) * 1e-6);
      }
      return std::nullopt;
    }, &n);
    EXPECT_GT(n, 0);
    return r;
  };
  const std::vector<std::string> norms = {"layernorm", "rmsnorm"};
  const double norm_ratio = kernels_ratio(norms, table.memory_efficiency(MemoryClass::Norm));
  // The H100's 0.45 is the mean over a forward and a backward; so is this (geometric mean over 12 kernels).
  EXPECT_NEAR(norm_ratio, 1.0, 0.10);
  EXPECT_LT(kernels_ratio(norms, hopper.memory_efficiency(MemoryClass::Norm)), norm_ratio);
  EXPECT_NEAR(kernels_ratio({"adamw_fused"}, table.memory_efficiency(MemoryClass::Optimizer)), 1.0, 0.03);
  // The MoE atomics: the unpermute's forward (scatter_add_) and the permute's backward (index_add_, its time = forward
  // and backward minus forward), each counted as a read and a write of the rows (`fwd_bytes`), as on the H100 (0.12-0.18
  // of 3.35 TB/s there; 0.09-0.15 of 4.8 TB/s here: atomics barely gain from the faster memory).
  const auto moe = measurements("h200-sxm", "moe_ops.csv");
  const int cop = moe.column("op"), cf = moe.column("fwd_us"), cfb = moe.column("fwd_bwd_us"),
            cfbytes = moe.column("fwd_bytes");
  ASSERT_TRUE(cop >= 0 && cf >= 0 && cfb >= 0 && cfbytes >= 0);
  auto atomics_ratio = [&](double fraction) {
    int n = 0;
    const double r = geomean_ratio(moe, [&](const auto& row) -> std::optional<double> {
      const std::string& op = row.fields[cop];
      if (op != "unpermute" && op != "permute_rows") return std::nullopt;
      const double fwd = std::stod(row.fields[cf]), fwd_bwd = std::stod(row.fields[cfb]);
      const double measured_us = op == "unpermute" ? fwd : fwd_bwd - fwd;
      return std::stod(row.fields[cfbytes]) / (bw * fraction) / (measured_us * 1e-6);
    }, &n);
    EXPECT_EQ(n, 8);
    return r;
  };
  EXPECT_NEAR(atomics_ratio(table.memory_efficiency(MemoryClass::ScatterAdd)), 1.0, 0.10);
  EXPECT_LT(atomics_ratio(hopper.memory_efficiency(MemoryClass::ScatterAdd)), 0.8);
  // The loss: Megatron-Core's default cross-entropy (cross_entropy.csv, `megatron_unfused`) at the five recipe shapes
  // (GPT-3 TP 8's small shard is launch-bound), against the model's 20 bytes per logit at the loss fraction.
  const auto ce = measurements("h200-sxm", "cross_entropy.csv");
  const int cc = ce.column("case"), ci = ce.column("impl"), ctok = ce.column("tokens"), cv = ce.column("vocab_shard"),
            cu = ce.column("fwd_bwd_us");
  ASSERT_TRUE(cc >= 0 && ci >= 0 && ctok >= 0 && cv >= 0 && cu >= 0);
  auto loss_ratio = [&](double fraction) {
    int n = 0;
    const double r = geomean_ratio(ce, [&](const auto& row) -> std::optional<double> {
      if (row.fields[ci] != "megatron_unfused" || row.fields[cc] == "gpt3-tp8") return std::nullopt;
      const double logits = std::stod(row.fields[ctok]) * std::stod(row.fields[cv]);
      return 20.0 * logits / (bw * fraction) / (std::stod(row.fields[cu]) * 1e-6);
    }, &n);
    EXPECT_EQ(n, 5);
    return r;
  };
  EXPECT_NEAR(loss_ratio(table.memory_efficiency(MemoryClass::Loss)), 1.0, 0.03);
  EXPECT_LT(loss_ratio(hopper.memory_efficiency(MemoryClass::Loss)), 0.9);  // the H100's 0.29: 17 % fast
}

TEST(Roofline, GroupedGemmFollowsTheH100Measurements) {
  // 24 torch._grouped_mm runs of DeepSeek-V3 and Qwen3-30B-A3B experts (data/measurements/h100-sxm/grouped.csv):
  // shared waves, grouped_gemm_scale and 0.8 us per expert give 9.3 % mean error (scale 0.90 alone: 15 %).
  const GpuSpec& h100 = stepsim::catalog::shipped().gpus.find("H100-SXM");
  EfficiencyTable table = stepsim::catalog::shipped().efficiency.resolve(h100);
  table.sustained_clock = 1.0;
  const auto model = make_roofline_model(h100, Precision::Bf16, table);
  const auto csv = measurements("h100-sxm", "grouped.csv");
  const int ce = csv.column("experts"), ct = csv.column("tokens_per_expert"), cn = csv.column("n"),
            ck = csv.column("k"), cus = csv.column("grouped_us");
  ASSERT_TRUE(ce >= 0 && ct >= 0 && cn >= 0 && ck >= 0 && cus >= 0);
  ASSERT_EQ(csv.rows.size(), 24u);
  double sum = 0;
  for (const auto& r : csv.rows) {
    const int experts = std::stoi(r.fields[ce]);
    Op op = gemm(std::stoll(r.fields[ct]), std::stoll(r.fields[cn]), std::stoll(r.fields[ck]));
    op.category = ComputeCategory::GroupedGemm;
    op.gemm_batch = experts;
    op.flops *= experts;
    op.bytes *= static_cast<uint64_t>(experts);
    sum += std::abs(model->duration_ns(op) / (std::stod(r.fields[cus]) * 1e3) - 1);
  }
  EXPECT_LT(sum / static_cast<double>(csv.rows.size()), 0.10);
}

TEST(Roofline, ElementwiseIsBandwidthBound) {
  const GpuSpec& h100 = stepsim::catalog::shipped().gpus.find("H100-SXM");
  const EfficiencyTable table = stepsim::catalog::shipped().efficiency.resolve(h100);
  const auto model = make_roofline_model(h100, Precision::Bf16, stepsim::catalog::shipped().efficiency.resolve(h100));
  const uint64_t bytes = 1ull << 30;
  const Op op = memory_op(ComputeCategory::Elementwise, bytes, 1.0 * (bytes / 2));  // 1 FLOP per bf16 element
  const double gap_ns = table.launch_gap_us * 1e3;  // the eager launch gap before every kernel
  const double expected_ns =
      static_cast<double>(bytes) / (h100.hbm_bandwidth_Bps * table.memory_efficiency(MemoryClass::Elementwise)) * 1e9;
  EXPECT_NEAR(static_cast<double>(model->duration_ns(op)) - gap_ns, expected_ns, 1.0);
  EXPECT_NEAR(expected_ns, 400.6e3, 100);  // 2^30 / (3.35e12 * 0.80)
  // A GEMM made skinny enough to be memory-bound runs at the stream ceiling: 4M x 16 x 4096 reads 34 GB (11.7 ms)
  // for 124 waves of 256x128 tiles (7.4 ms).
  Op skinny = gemm(1 << 22, 16, 4096);
  const double mem_ns =
      static_cast<double>(skinny.bytes) / (h100.hbm_bandwidth_Bps * table.memory_efficiency(MemoryClass::Stream)) * 1e9;
  EXPECT_NEAR(static_cast<double>(model->duration_ns(skinny)) - gap_ns, mem_ns, 1.0);
}

TEST(Roofline, EagerLaunchGapPrecedesEveryKernelButNotHostTime) {
  // launch_gap_us is added once per kernel; a CUDA-graph job (training.cuda_graphs) runs without it; host-side time
  // (a Host gap, a host<->device copy, the CPU optimizer) launches no kernel.
  const GpuSpec& h100 = stepsim::catalog::shipped().gpus.find("H100-SXM");
  EfficiencyTable table = stepsim::catalog::shipped().efficiency.resolve(h100);
  EXPECT_DOUBLE_EQ(table.launch_gap_us, 2.5);  // data/efficiency.yaml: real traces' busy-stream gaps, H100 eager vs graph
  const auto eager = make_roofline_model(h100, Precision::Bf16, table);
  table.launch_gap_us = 0;
  const auto graphed = make_roofline_model(h100, Precision::Bf16, table);
  const Op norm = memory_op(ComputeCategory::Norm, 1 << 26, 0);
  EXPECT_EQ(eager->duration_ns(norm) - graphed->duration_ns(norm), 2500);
  EXPECT_EQ(eager->duration_ns(gemm(4096, 4096, 4096)) - graphed->duration_ns(gemm(4096, 4096, 4096)), 2500);
  Op host;
  host.category = ComputeCategory::Host;
  host.duration_ns = 7300;
  EXPECT_EQ(eager->duration_ns(host), 7300);
  const Op copy = memory_op(ComputeCategory::Offload, 1 << 26, 0);
  EXPECT_EQ(eager->duration_ns(copy), graphed->duration_ns(copy));
}

TEST(Roofline, PrecisionChangesThePeak) {
  const auto& cat = stepsim::catalog::shipped().gpus;
  const GpuSpec& h100 = cat.find("H100-SXM");
  const Op op = gemm(8192, 8192, 8192);
  const double bf16 = static_cast<double>(make_roofline_model(h100, Precision::Bf16, stepsim::catalog::shipped().efficiency.resolve(h100))->duration_ns(op));
  const double fp16 = static_cast<double>(make_roofline_model(h100, Precision::Fp16, stepsim::catalog::shipped().efficiency.resolve(h100))->duration_ns(op));
  const double fp32 = static_cast<double>(make_roofline_model(h100, Precision::Fp32, stepsim::catalog::shipped().efficiency.resolve(h100))->duration_ns(op));
  const double fp8 = static_cast<double>(make_roofline_model(h100, Precision::Fp8, stepsim::catalog::shipped().efficiency.resolve(h100))->duration_ns(op));
  EXPECT_NEAR(fp16, bf16, 1.0);
  // TF32 peak: half of BF16's, as rounded on the datasheet; the per-wave and launch overheads do not double.
  EXPECT_NEAR(fp32 / bf16, 989.5 / 494.5, 0.02);
  EXPECT_LT(fp32 / bf16, 989.5 / 494.5);
  const double fp8_scale =
      stepsim::catalog::shipped().efficiency.resolve(h100).gemm_precision_scale[static_cast<int>(Precision::Fp8)];
  // FP8 peak doubles at the measured scale 0.932; the per-wave and launch overheads (25.5 of 1,574 us) do not shrink.
  EXPECT_NEAR(bf16 / fp8, 2.0 * fp8_scale, 0.05);
  EXPECT_LT(bf16 / fp8, 2.0 * fp8_scale);
  const GpuSpec& a100 = cat.find("A100-80GB");
  EXPECT_EQ(make_roofline_model(a100, Precision::Fp8, stepsim::catalog::shipped().efficiency.resolve(a100))->duration_ns(op),
            make_roofline_model(a100, Precision::Bf16, stepsim::catalog::shipped().efficiency.resolve(a100))->duration_ns(op));  // no FP8 on Ampere
}

TEST(Roofline, GemmTimeNeverDecreasesWithSize) {
  for (const GpuSpec& g : stepsim::catalog::shipped().gpus.gpus()) {
    for (Precision p : {Precision::Fp32, Precision::Fp16, Precision::Bf16, Precision::Fp8}) {
      const auto model = make_roofline_model(g, p, stepsim::catalog::shipped().efficiency.resolve(g));
      int64_t prev = 0;
      for (double s = 16; s <= 32768; s *= 1.1) {  // square GEMMs
        const int64_t n = static_cast<int64_t>(s);
        const int64_t t = model->duration_ns(gemm(n, n, n));
        EXPECT_GE(t, prev) << g.name << " n=" << n;
        prev = t;
      }
      prev = 0;
      for (int64_t k = 1; k <= (1 << 20); k *= 2) {  // growing one dimension only
        const int64_t t = model->duration_ns(gemm(4096, 1024, k));
        EXPECT_GE(t, prev) << g.name << " k=" << k;
        prev = t;
      }
    }
  }
}

TEST(EfficiencyTables, ShippedTablesAreBounded) {
  const auto& cat = stepsim::catalog::shipped().efficiency;
  for (const auto& arch : cat.archs()) {
    SCOPED_TRACE(arch);
    const EfficiencyTable t = cat.resolve_arch(arch);
    EXPECT_FALSE(t.gemm_waves.tiles.empty());
    EXPECT_GT(t.gemm_waves.efficiency, 0.5);
    EXPECT_LE(t.gemm_waves.efficiency, 1.0);
    EXPECT_GE(t.gemm_waves.wave_overhead_us, 0);
    EXPECT_GE(t.gemm_waves.launch_us, 0);
    for (double s : t.gemm_precision_scale) EXPECT_TRUE(s > 0 && s <= 1);
    EXPECT_GT(t.kernel_floor_us, 0);
  }
  // Every catalog GPU has a table.
  for (const GpuSpec& g : stepsim::catalog::shipped().gpus.gpus()) EXPECT_NO_THROW(cat.resolve(g)) << g.name;
}

// --- loader errors --------------------------------------------------------------------------------------------

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::path(stepsim::test::temp_dir()) / "stepsim_efficiency";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

const char* const kValidEfficiency =
    "defaults:\n"
    "  kernel_floor_us: 3\n"
    "  host_to_device_GBps: 25\n"
    "  cpu_optimizer_GBps: 20\n"
    "  memory_efficiency: {stream: 0.9, elementwise: 0.8, norm: 0.7, embedding: 0.6, loss: 0.7, optimizer: 0.8,\n"
    "                      scatter_add: 0.15}\n"
    "  gemm_precision_scale: {fp32: 1.0, fp16: 1.0, bf16: 1.0, fp8: 1.0}\n"
    "  grouped_gemm_scale: 0.9\n"
    "archs:\n"
    "  hopper:\n"
    "    gemm_waves: {tiles: [[128, 256], [128, 128]], efficiency: 0.8, wave_overhead_us: 1, launch_us: 2, group_overhead_us: 0.5}\n"
    "    attention: {forward: 0.6, backward: 0.5}\n"
    "gpus:\n"
    "  test_gpu: {attention: {forward: 0.9}, memory_efficiency: {norm: 0.5}, gemm_waves: {efficiency: 0.6}}\n";

std::string variant(const std::string& from, const std::string& to) {
  std::string s = kValidEfficiency;
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  s.replace(pos, from.size(), to);
  return s;
}

void expect_error(const std::string& file, const std::string& text, std::initializer_list<std::string> parts) {
  const std::string path = write_temp(file, text);
  try {
    EfficiencyCatalog::load(path);
    FAIL() << "no error for " << file;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
  }
}

TEST(EfficiencyTables, MergesDefaultsArchAndGpuOverride) {
  const auto cat = EfficiencyCatalog::load(write_temp("valid.yaml", kValidEfficiency));
  GpuSpec g = round_gpu();
  g.name = "TEST-GPU";  // matches gpus.test_gpu ignoring case and separators
  const EfficiencyTable t = cat.resolve(g);
  EXPECT_DOUBLE_EQ(t.attention_forward, 0.9);
  EXPECT_DOUBLE_EQ(t.attention_backward, 0.5);
  EXPECT_DOUBLE_EQ(t.memory_efficiency(MemoryClass::Norm), 0.5);
  EXPECT_DOUBLE_EQ(t.memory_efficiency(MemoryClass::Elementwise), 0.8);
  EXPECT_DOUBLE_EQ(t.kernel_floor_us, 3);
  EXPECT_DOUBLE_EQ(t.gemm_waves.efficiency, 0.6);  // gemm_waves merges key by key: the override's efficiency,
  ASSERT_EQ(t.gemm_waves.tiles.size(), 2u);         // the arch's tiles and overheads
  EXPECT_EQ(t.gemm_waves.tiles[0][1], 256);
  EXPECT_DOUBLE_EQ(t.gemm_waves.launch_us, 2);
  g.name = "OTHER";
  EXPECT_DOUBLE_EQ(cat.resolve(g).attention_forward, 0.6);
  g.arch = stepsim::hw::GpuArch::Volta;
  try {
    cat.resolve(g);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("archs.volta"), std::string::npos) << e.what();
  }
}

TEST(Roofline, AttentionFollowsTheSequenceAndHeadDimCurves) {
  EfficiencyTable t = round_table();
  t.attention_sequence = {{1024, 0.5}, {4096, 1.0}};
  t.attention_head_dim = {{64, 0.8}, {128, 1.0}};
  // Interpolated in log2: 2048 tokens is half-way from 1024 to 4096 -> 0.75; head dim 2^6.5 half-way -> 0.9.
  EXPECT_DOUBLE_EQ(t.attention_shape_factor(2048, 128), 0.75);
  EXPECT_NEAR(t.attention_shape_factor(4096, std::exp2(6.5)), 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(t.attention_shape_factor(256, 32), 0.5 * 0.8);    // flat below the first points
  EXPECT_DOUBLE_EQ(t.attention_shape_factor(1 << 20, 256), 1.0);    // and above the last
  EXPECT_DOUBLE_EQ(t.attention_shape_factor(0, 0), 1.0);            // an op without a shape
  const auto model = make_roofline_model(round_gpu(), Precision::Bf16, t);
  Op att;
  att.category = ComputeCategory::Attention;
  att.flops = 1e12;
  att.gemm_n = 2048;
  att.gemm_k = 64;
  // 1e12 / (100e12 * 0.4 * 0.75 * 0.8) = 41.667 ms forward; backward at 0.2: 83.333 ms.
  att.phase = Phase::Forward;
  EXPECT_EQ(model->duration_ns(att), 41666667);
  att.phase = Phase::Backward;
  EXPECT_EQ(model->duration_ns(att), 83333333);
}

TEST(EfficiencyTables, AttentionShapeCurvesLoadMergeAndRefuseBadPoints) {
  const std::string curves = "    attention: {forward: 0.6, backward: 0.5, sequence_curve: [[512, 0.5], [8192, 1.0]], "
                             "head_dim_curve: [[64, 0.8], [128, 1]]}\n";
  const auto cat = EfficiencyCatalog::load(write_temp("curves.yaml", variant("    attention: {forward: 0.6, backward: 0.5}\n", curves)));
  GpuSpec g = round_gpu();
  g.name = "OTHER";
  const EfficiencyTable t = cat.resolve(g);
  ASSERT_EQ(t.attention_sequence.size(), 2u);
  EXPECT_DOUBLE_EQ(t.attention_shape_factor(2048, 64), 0.75 * 0.8);
  g.name = "TEST-GPU";  // its override sets attention.forward only: the arch's curves stay
  EXPECT_DOUBLE_EQ(cat.resolve(g).attention_shape_factor(2048, 128), 0.75);
  expect_error("seq_order.yaml", variant("    attention: {forward: 0.6, backward: 0.5}\n",
                                         "    attention: {forward: 0.6, backward: 0.5, sequence_curve: [[512, 0.5], [256, 1]]}\n"),
               {"archs.hopper.attention.sequence_curve[1]", "increase"});
  expect_error("seq_factor.yaml", variant("    attention: {forward: 0.6, backward: 0.5}\n",
                                          "    attention: {forward: 0.6, backward: 0.5, head_dim_curve: [[64, 1.5]]}\n"),
               {"archs.hopper.attention.head_dim_curve[0][1]", "(0, 1]"});
  expect_error("seq_x.yaml", variant("    attention: {forward: 0.6, backward: 0.5}\n",
                                     "    attention: {forward: 0.6, backward: 0.5, sequence_curve: [[-1, 0.5]]}\n"),
               {"archs.hopper.attention.sequence_curve[0][0]", "kv_tokens"});
}

TEST(EfficiencyTables, StrictLoadingNamesFileAndKey) {
  expect_error("tile_side.yaml", variant("[128, 256]", "[128, 250]"), {"archs.hopper.gemm_waves.tiles[0][1]", "multiple of 8"});
  expect_error("tile_pair.yaml", variant("[128, 256]", "[128]"), {"archs.hopper.gemm_waves.tiles[0]", "pair"});
  expect_error("no_tiles.yaml", variant("tiles: [[128, 256], [128, 128]]", "tiles: []"), {"archs.hopper.gemm_waves.tiles", "1 to 16"});
  expect_error("tile_eff.yaml", variant("efficiency: 0.8", "efficiency: 1.2"), {"archs.hopper.gemm_waves.efficiency", "(0, 1]"});
  expect_error("wave_us.yaml", variant("wave_overhead_us: 1", "wave_overhead_us: -1"), {"archs.hopper.gemm_waves.wave_overhead_us", "microseconds"});
  expect_error("wave_key.yaml", variant("launch_us: 2", "launch_us: 2, turbo: 1"), {"archs.hopper.gemm_waves.turbo", "unknown key"});
  expect_error("no_launch.yaml", variant(", launch_us: 2", ""), {"archs.hopper", "missing key gemm_waves.launch_us"});
  expect_error("unknown_key.yaml", variant("grouped_gemm_scale: 0.9", "grouped_gemm_scale: 0.9\n  turbo: 2"),
               {"defaults.turbo", "unknown key"});
  expect_error("missing.yaml", variant("    attention: {forward: 0.6, backward: 0.5}\n", ""),
               {"archs.hopper", "attention.forward"});
  expect_error("bad_mem.yaml", variant("norm: 0.7", "norm: 0"), {"defaults.memory_efficiency.norm"});
  expect_error("bad_h2d.yaml", variant("host_to_device_GBps: 25", "host_to_device_GBps: -1"),
               {"defaults.host_to_device_GBps", "> 0"});
  expect_error("bad_cpu_opt.yaml", variant("cpu_optimizer_GBps: 20", "cpu_optimizer_GBps: 0"),
               {"defaults.cpu_optimizer_GBps", "> 0"});
  expect_error("no_cpu_opt.yaml", variant("  cpu_optimizer_GBps: 20\n", ""), {"missing key cpu_optimizer_GBps"});
  expect_error("not_number.yaml", variant("kernel_floor_us: 3", "kernel_floor_us: soon"),
               {"defaults.kernel_floor_us", "number"});
  expect_error("bad_attention.yaml", variant("backward: 0.5", "sideways: 0.5"), {"archs.hopper.attention.sideways"});
  expect_error("no_archs.yaml", "defaults: {}\n", {"archs", "missing"});
  expect_error("syntax.yaml", "defaults: {\n", {"malformed YAML"});
  EXPECT_THROW(EfficiencyCatalog::load("/nonexistent/efficiency.yaml"), InputError);
}

}  // namespace
