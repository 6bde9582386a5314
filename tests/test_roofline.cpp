// Roofline compute model and data/efficiency.yaml: hand-computed cases, monotonicity, strict loading.
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <cmath>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <string>

#include "stepsim/cost/compute_model.hpp"
#include "stepsim/cost/efficiency_table.hpp"
#include "stepsim/hw/gpu_catalog.hpp"
#include "stepsim/spec/input_error.hpp"

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
  g.arch = "hopper";
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
  t.gemm_curve = {{20, 0.5}, {40, 0.8}};
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
  // GEMM 1024x1024x512 = 2^30 FLOPs; curve at x=30: 0.5 + (30-20)/20 * 0.3 = 0.65;
  // 2^30 / (100e12 * 0.65) = 16.519 us. Its 4 MiB of bytes take 4.2 us at 1 TB/s: compute-bound.
  EXPECT_EQ(model->duration_ns(gemm(1024, 1024, 512)), 16519);
  // Same GEMM in FP8: peak 200e12, scale 0.5 -> same rate, same time.
  EXPECT_EQ(make_roofline_model(round_gpu(), Precision::Fp8, round_table())->duration_ns(gemm(1024, 1024, 512)),
            16519);
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
  // Grouped GEMM, 4 experts of 1024x1024x512 (2^30 each): eff 0.65 * 0.5; 2^32 / (100e12 * 0.325) = 132.1528 us.
  Op grouped = gemm(1024, 1024, 512);
  grouped.category = ComputeCategory::GroupedGemm;
  grouped.gemm_batch = 4;
  grouped.flops *= 4;
  grouped.bytes *= 4;
  EXPECT_EQ(model->duration_ns(grouped), 132153);
  // Without shape fields the per-GEMM size is flops / gemm_batch: same answer.
  grouped.gemm_m = grouped.gemm_n = grouped.gemm_k = 0;
  EXPECT_EQ(model->duration_ns(grouped), 132153);
}

TEST(Roofline, FloorAndZeroWork) {
  const auto model = make_roofline_model(round_gpu(), Precision::Bf16, round_table());
  EXPECT_EQ(model->duration_ns(Op{}), 0);  // no flops, no bytes
  EXPECT_EQ(model->duration_ns(memory_op(ComputeCategory::Elementwise, 1)), 2000);  // 2 us floor
  EXPECT_EQ(model->duration_ns(gemm(1, 1, 1)), 2000);
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

TEST(Roofline, BigGemmOnH100IsComputeBoundAtTheCurvePlateau) {
  const GpuSpec& h100 = GpuCatalog::builtin().find("H100-SXM");
  const EfficiencyTable table = EfficiencyCatalog::builtin().resolve(h100);
  const auto model = make_roofline_model(h100, Precision::Bf16);
  const Op op = gemm(8192, 8192, 8192);  // 2^40 FLOPs
  const double eff = table.gemm_efficiency(op.flops) * table.gemm_precision_scale[static_cast<int>(Precision::Bf16)];
  // Published large-GEMM BF16 rates on H100: ~0.7-0.8 of the dense peak (data/efficiency.yaml cites them).
  EXPECT_GE(eff, 0.70);
  EXPECT_LE(eff, 0.85);
  // The calibrated sustained clock (data/efficiency.yaml, hopper 0.832) scales the microbenchmark curve.
  const double expected_ns = op.flops / (989.5e12 * eff * table.sustained_clock) * 1e9;  // 1.443 ms / 0.832
  EXPECT_NEAR(static_cast<double>(model->duration_ns(op)), expected_ns, 1.0);
  EXPECT_NEAR(expected_ns * table.sustained_clock, 1.443e6, 1e3);
}

TEST(Roofline, TinyGemmIsLaunchBound) {
  const GpuSpec& h100 = GpuCatalog::builtin().find("H100-SXM");
  const EfficiencyTable table = EfficiencyCatalog::builtin().resolve(h100);
  const auto model = make_roofline_model(h100, Precision::Bf16);
  const int64_t floor_ns = std::llround(table.kernel_floor_us * 1e3);
  EXPECT_EQ(model->duration_ns(gemm(64, 64, 64)), floor_ns);
  EXPECT_EQ(model->duration_ns(gemm(128, 128, 128)), floor_ns);
  EXPECT_GT(model->duration_ns(gemm(4096, 4096, 4096)), floor_ns);
}

TEST(Roofline, ElementwiseIsBandwidthBound) {
  const GpuSpec& h100 = GpuCatalog::builtin().find("H100-SXM");
  const EfficiencyTable table = EfficiencyCatalog::builtin().resolve(h100);
  const auto model = make_roofline_model(h100, Precision::Bf16);
  const uint64_t bytes = 1ull << 30;
  const Op op = memory_op(ComputeCategory::Elementwise, bytes, 1.0 * (bytes / 2));  // 1 FLOP per bf16 element
  const double expected_ns =
      static_cast<double>(bytes) / (h100.hbm_bandwidth_Bps * table.memory_efficiency(MemoryClass::Elementwise)) * 1e9;
  EXPECT_NEAR(static_cast<double>(model->duration_ns(op)), expected_ns, 1.0);
  EXPECT_NEAR(expected_ns, 400.6e3, 100);  // 2^30 / (3.35e12 * 0.80)
  // A GEMM made skinny enough to be memory-bound runs at the stream ceiling.
  Op skinny = gemm(1 << 22, 16, 16);
  const double mem_ns =
      static_cast<double>(skinny.bytes) / (h100.hbm_bandwidth_Bps * table.memory_efficiency(MemoryClass::Stream)) * 1e9;
  EXPECT_NEAR(static_cast<double>(model->duration_ns(skinny)), mem_ns, 1.0);
}

TEST(Roofline, PrecisionChangesThePeak) {
  const auto& cat = GpuCatalog::builtin();
  const GpuSpec& h100 = cat.find("H100-SXM");
  const Op op = gemm(8192, 8192, 8192);
  const double bf16 = static_cast<double>(make_roofline_model(h100, Precision::Bf16)->duration_ns(op));
  const double fp16 = static_cast<double>(make_roofline_model(h100, Precision::Fp16)->duration_ns(op));
  const double fp32 = static_cast<double>(make_roofline_model(h100, Precision::Fp32)->duration_ns(op));
  const double fp8 = static_cast<double>(make_roofline_model(h100, Precision::Fp8)->duration_ns(op));
  EXPECT_NEAR(fp16, bf16, 1.0);
  EXPECT_NEAR(fp32 / bf16, 989.5 / 494.5, 1e-6);  // TF32 peak: half of BF16's, as rounded on the datasheet
  const double fp8_scale =
      EfficiencyCatalog::builtin().resolve(h100).gemm_precision_scale[static_cast<int>(Precision::Fp8)];
  EXPECT_NEAR(bf16 / fp8, 2.0 * fp8_scale, 2e-6);  // FP8 peak doubles, MAMF-derived scale 0.883 (ns rounding)
  const GpuSpec& a100 = cat.find("A100-80GB");
  EXPECT_EQ(make_roofline_model(a100, Precision::Fp8)->duration_ns(op),
            make_roofline_model(a100, Precision::Bf16)->duration_ns(op));  // no FP8 on Ampere
}

TEST(Roofline, GemmTimeNeverDecreasesWithSize) {
  for (const GpuSpec& g : GpuCatalog::builtin().gpus()) {
    for (Precision p : {Precision::Fp32, Precision::Fp16, Precision::Bf16, Precision::Fp8}) {
      const auto model = make_roofline_model(g, p);
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

TEST(EfficiencyTables, ShippedCurvesAreBoundedAndMonotone) {
  const auto& cat = EfficiencyCatalog::builtin();
  for (const auto& arch : cat.archs()) {
    SCOPED_TRACE(arch);
    const EfficiencyTable t = cat.resolve_arch(arch);
    double prev_eff = 0, prev_time = 0;
    for (double x = 10; x <= 50; x += 0.05) {
      const double flops = std::exp2(x);
      const double eff = t.gemm_efficiency(flops);
      EXPECT_GT(eff, 0);
      EXPECT_LE(eff, 1);
      EXPECT_GE(eff, prev_eff);
      EXPECT_GE(flops / eff, prev_time * (1 - 1e-12));
      prev_eff = eff;
      prev_time = flops / eff;
    }
    for (double s : t.gemm_precision_scale) EXPECT_TRUE(s > 0 && s <= 1);
    EXPECT_GT(t.kernel_floor_us, 0);
  }
  // Every catalog GPU has a table.
  for (const GpuSpec& g : GpuCatalog::builtin().gpus()) EXPECT_NO_THROW(cat.resolve(g)) << g.name;
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
    "  memory_efficiency: {stream: 0.9, elementwise: 0.8, norm: 0.7, embedding: 0.6, loss: 0.7, optimizer: 0.8}\n"
    "  gemm_precision_scale: {fp32: 1.0, fp16: 1.0, bf16: 1.0, fp8: 1.0}\n"
    "  grouped_gemm_scale: 0.9\n"
    "archs:\n"
    "  hopper:\n"
    "    gemm_curve: [[30, 0.1], [32, 0.2], [40, 0.8]]\n"
    "    attention: {forward: 0.6, backward: 0.5}\n"
    "gpus:\n"
    "  test_gpu: {attention: {forward: 0.9}, memory_efficiency: {norm: 0.5}}\n";

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
  EXPECT_DOUBLE_EQ(t.gemm_efficiency(std::exp2(31)), 0.15);
  EXPECT_DOUBLE_EQ(t.gemm_efficiency(1), 0.1);            // flat below the first point
  EXPECT_DOUBLE_EQ(t.gemm_efficiency(std::exp2(60)), 0.8);  // flat above the last
  g.name = "OTHER";
  EXPECT_DOUBLE_EQ(cat.resolve(g).attention_forward, 0.6);
  g.arch = "volta";
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
  expect_error("decreasing.yaml", variant("[32, 0.2]", "[32, 0.05]"), {"archs.hopper.gemm_curve[1]", "decrease"});
  expect_error("above_one.yaml", variant("[40, 0.8]", "[40, 1.2]"), {"archs.hopper.gemm_curve[2][1]", "(0, 1]"});
  expect_error("too_steep.yaml", variant("[32, 0.2]", "[31, 0.2]"), {"archs.hopper.gemm_curve[1]", "faster than"});
  expect_error("x_order.yaml", variant("[32, 0.2]", "[29, 0.2]"), {"archs.hopper.gemm_curve[1]", "increase"});
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
  expect_error("syntax.yaml", "defaults: {\n", {"YAML syntax error"});
  EXPECT_THROW(EfficiencyCatalog::load("/nonexistent/efficiency.yaml"), InputError);
}

}  // namespace
