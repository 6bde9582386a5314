// What PyTorch-native training runs, against the kernels measured on one H200 (data/measurements/h200-sxm,
// bench/gpu/measure_torch_native.py; its README says how each number was taken): the torchtitan profile's eager and
// compiled memory-bound kernels, the compile gain of a whole Llama-3 8B layer, PyTorch's ring attention bookkeeping
// and FlashAttention-2 at long context. Model times are the shipped H200 table's at the clock the kernels ran at
// (sustained_clock 1: every section ran at 1,965-1,980 MHz) with no host launch gap (CUDA-graph replays).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/catalog/efficiency_table.hpp"
#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/workload/megatron/emitter.hpp"
#include "stepsim/workload/megatron/features.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

using workload::ComputeCategory;
using workload::megatron::SiteTraffic;

constexpr const char* kDir = "h200-sxm";

std::unique_ptr<cost::ComputeModel> h200_at_full_clock() {
  const hw::GpuSpec& gpu = catalog::shipped().gpus.find("H200");
  cost::EfficiencyTable table = catalog::shipped().efficiency.resolve(gpu);
  table.sustained_clock = 1.0;
  table.launch_gap_us = 0;
  return cost::make_roofline_model(gpu, spec::Precision::Bf16, table);
}

// llama_block.csv's rows by case and mode: (forward us, forward+backward us).
std::map<std::string, std::pair<double, double>> block_rows() {
  const cost::CsvTable csv = test::measurements(kDir, "llama_block.csv");
  const int c = csv.column("case"), m = csv.column("mode"), f = csv.column("fwd_us"), fb = csv.column("fwd_bwd_us");
  std::map<std::string, std::pair<double, double>> out;
  for (const auto& r : csv.rows) {
    out[r.fields[c] + "/" + r.fields[m]] = {std::stod(r.fields[f]), std::stod(r.fields[fb])};
  }
  return out;
}

// A memory-bound piece as the profile costs it: forward and backward microseconds for `elements` elements.
std::pair<double, double> piece_us(const cost::ComputeModel& model, const SiteTraffic& site, bool fused,
                                   int64_t elements) {
  const ComputeCategory cat = fused ? ComputeCategory::Norm : ComputeCategory::Elementwise;
  return {model.duration_ns(workload::megatron::memop(cat, site.fwd.per_element(2) * elements)) * 1e-3,
          model.duration_ns(workload::megatron::memop(cat, site.bwd.per_element(2) * elements)) * 1e-3};
}

TEST(TorchNativeMeasured, EagerAndCompiledPiecesMoveTheBytesTheProfileCounts) {
  // Each piece alone at torchtitan's local batch, 2 x 8,192 tokens of Llama-3 8B: RMSNorm over 4,096 (67.1 M
  // elements), RoPE on Q (32 heads of 128: 67.1 M), SwiGLU over 14,336 (234.9 M). The measured backward is
  // (forward+backward) - forward. Eager RMSNorm's forward runs below the elementwise rate (a chain of six small-
  // reduction and cast kernels), hence the 0.7 floor; compiled RoPE keeps the eager bytes (no complex codegen) and
  // runs at the eager rate's 0.79x, hence the 1.1 ceiling over eager ones. Before this profile's compiled norm was
  // costed as one PyTorch norm kernel of 5β backward (2.6x the measured time) and compiled RoPE as one 2β kernel
  // (0.2x), which this test refuses.
  const auto model = h200_at_full_clock();
  const auto rows = block_rows();
  const int64_t hidden = 16384LL * 4096, ffn = 16384LL * 14336;
  struct Piece {
    const char* name;
    SiteTraffic workload::megatron::LayerKernels::*site;
    int64_t elements;
  };
  const Piece pieces[] = {{"rmsnorm", &workload::megatron::LayerKernels::norm, hidden},
                          {"rope_q", &workload::megatron::LayerKernels::rotary, hidden},
                          {"swiglu", &workload::megatron::LayerKernels::swiglu, ffn}};
  for (const Piece& p : pieces) {
    for (const bool compiled : {false, true}) {
      const auto& k = workload::megatron::torchtitan_profile(compiled).kernels;
      const auto [fwd, bwd] = piece_us(*model, k.*p.site, p.site == &workload::megatron::LayerKernels::norm &&
                                                              k.norm_fused, p.elements);
      const auto [m_fwd, m_fb] = rows.at(std::string(p.name) + "/" + (compiled ? "compiled" : "eager"));
      SCOPED_TRACE(std::string(p.name) + (compiled ? " compiled" : " eager"));
      EXPECT_GT(fwd / m_fwd, 0.70);
      EXPECT_LT(fwd / m_fwd, 1.20);
      EXPECT_GT(bwd / (m_fb - m_fwd), 0.70);
      EXPECT_LT(bwd / (m_fb - m_fwd), 1.20);
    }
  }
  // The eager residual add: read both, write the sum (its backward passes the gradient through: no kernel alone).
  const auto add = piece_us(*model, workload::megatron::torchtitan_profile(false).kernels.residual_add, false, hidden);
  EXPECT_NEAR(add.first / rows.at("residual_add/eager").first, 1.0, 0.15);
}

TEST(TorchNativeMeasured, CompileGainOfALlamaLayerIsTheMeasuredOne) {
  // One Llama-3 8B layer (with its embedding, final norm and loss, the same either way) at 2 x 8,192 tokens on an
  // H200: eager minus compiled step time. Measured on the block alone, forward+backward: 4.6 ms (eager as a CUDA graph
  // against compiled) and 6.3 ms in a second run; the compiled figure holds its host time, so the device-only gain
  // lies in about that range. The final norm stays eager under per-block compile.
  const auto rows = block_rows();
  const double low = rows.at("llama3-8b-block-2x8192/eager_graph").second -
                     rows.at("llama3-8b-block-2x8192/compiled").second;
  const double high = rows.at("llama3-8b-block-2x8192-run2/eager_graph").second -
                      rows.at("llama3-8b-block-2x8192-run2/compiled").second;
  const auto step_us = [](bool compiled) {
    const std::string yaml =
        "model: {name: llama3-8b-layer, num_layers: 1, hidden_size: 4096, num_attention_heads: 32,"
        " num_query_groups: 8, ffn_hidden_size: 14336, activation: swiglu, normalization: rmsnorm,"
        " vocab_size: 128256, seq_length: 8192}\n"
        "training: {micro_batch_size: 2, global_batch_size: 2, precision: bf16, framework: torchtitan, compile: " +
        std::string(compiled ? "true" : "false") + "}\n"
        "simulation: {host_time_scale: 0, sustained_clock: 1.0}\n"
        "cluster: {gpu: H200, num_gpus: 1}\n";
    return sim::run_simulation(catalog::shipped(), test::job_from_yaml(yaml), {0}).result.step_ns * 1e-3;
  };
  const double gain = step_us(false) - step_us(true);
  EXPECT_GT(gain, 0.9 * low);
  EXPECT_LT(gain, 1.1 * high);
}

TEST(TorchNativeMeasured, RingBookkeepingIsWhatPyTorchsRingAddsToSdpa) {
  // cp_ring.csv: one CP rank's ring at 32K local tokens, 8 heads of 128, as the templated ring attention runs it
  // (`emulated`) and its SDPA calls alone (`sdpa_only`); the difference is the merges, accumulations and
  // concatenations. The model costs the last rank (full merges, partial dK/dV updates). Forward within 20 %. Backward:
  // its fp32 += bf16 accumulations and concatenations run at about half the bandwidth, not the elementwise rate the
  // model gives them, so the model's share is 0.6-0.7 of the measured (about 3 % of the attention's backward, against
  // 4 % measured). CP 2 is left out: its one merge (0.4-0.8 ms in the file) is within the noise of the two 13 ms
  // timings it is the difference of.
  const cost::CsvTable csv = test::measurements(kDir, "cp_ring.csv");
  const int cc = csv.column("cp"), cr = csv.column("rank"), cm = csv.column("mode"), cf = csv.column("fwd_us"),
            cb = csv.column("bwd_us");
  std::map<std::string, std::pair<double, double>> at;
  for (const auto& r : csv.rows) at[r.fields[cc] + "/" + r.fields[cr] + "/" + r.fields[cm]] = {
      std::stod(r.fields[cf]), std::stod(r.fields[cb])};
  const auto model = h200_at_full_clock();
  for (const int c : {4, 8}) {
    const std::string yaml =
        "model: {name: ring, num_layers: 1, hidden_size: 1024, num_attention_heads: 8, num_query_groups: 8,"
        " ffn_hidden_size: 4096, activation: swiglu, normalization: rmsnorm, vocab_size: 32000, seq_length: " +
        std::to_string(32768 * c) + "}\n"
        "parallelism: {context: " + std::to_string(c) + "}\n"
        "training: {micro_batch_size: 1, global_batch_size: 1, precision: bf16, framework: torchtitan}\n"
        "cluster: {gpu: H200, num_gpus: " + std::to_string(c) + "}\n";
    const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
    double fwd = 0, bwd = 0;
    for (const workload::Op& op : w.programs[0].ops) {
      const std::string name = w.programs[0].name(op);
      if (op.kind != workload::OpKind::Compute || name.rfind("cp_ring_", 0) != 0) continue;
      (op.phase == workload::Phase::Forward ? fwd : bwd) += model->duration_ns(op) * 1e-3;
    }
    const std::string rank = std::to_string(c - 1) + "/";
    const auto [e_f, e_b] = at.at(std::to_string(c) + "/" + rank + "emulated");
    const auto [s_f, s_b] = at.at(std::to_string(c) + "/" + rank + "sdpa_only");
    SCOPED_TRACE("cp " + std::to_string(c));
    EXPECT_NEAR(fwd / (e_f - s_f), 1.0, 0.20);
    EXPECT_GT(bwd / (e_b - s_b), 0.55);
    EXPECT_LT(bwd / (e_b - s_b), 0.80);
  }
}

TEST(TorchNativeMeasured, FlashAttentionHoldsItsRateFrom8KTo256KTokens) {
  // long_attention.csv, FlashAttention-2 (PyTorch SDPA's flash backend, what torchtitan's CP runs), causal, head dim
  // 128, fewer heads as the sequence grows: 0.31-0.35 of peak forward and 0.28-0.33 backward at every length. The
  // shipped Hopper attention (fitted to Megatron-Core runs, scaled by the fitted training clock) is costed within 20 %
  // of it at each length: the shape curves do not drift at long context.
  const cost::CsvTable csv = test::measurements(kDir, "long_attention.csv");
  const int cb = csv.column("backend"), cc = csv.column("case"), ch = csv.column("heads"), cs = csv.column("seq_q"),
            cp = csv.column("pass"), ct = csv.column("time_us");
  int checked = 0;
  for (const auto& r : csv.rows) {
    if (r.fields[cb] != "flash" || r.fields[cc] != "causal") continue;
    const int64_t heads = std::stoll(r.fields[ch]), s = std::stoll(r.fields[cs]);
    const std::string yaml =
        "model: {name: attn, num_layers: 1, hidden_size: " + std::to_string(heads * 128) +
        ", num_attention_heads: " + std::to_string(heads) + ", num_query_groups: " + std::to_string(heads) +
        ", ffn_hidden_size: 1024, activation: swiglu, normalization: rmsnorm, vocab_size: 32000, seq_length: " +
        std::to_string(s) + "}\n"
        "training: {micro_batch_size: 1, global_batch_size: 1, precision: bf16, framework: torchtitan}\n"
        "cluster: {gpu: H200, num_gpus: 1}\n";
    const spec::JobSpec job = test::job_from_yaml(yaml);
    const auto model = sim::make_compute_model(catalog::shipped(), job);
    const workload::Workload w = workload::build_megatron_workload(job);
    const bool fwd = r.fields[cp] == "fwd";
    double us = 0;
    for (const workload::Op& op : w.programs[0].ops) {
      if (w.programs[0].name(op) == (fwd ? "core_attention" : "core_attention_bwd")) us = model->duration_ns(op) * 1e-3;
    }
    SCOPED_TRACE(r.fields[cp] + " " + std::to_string(s));
    EXPECT_NEAR(us / std::stod(r.fields[ct]), 1.0, 0.20);
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

}  // namespace
}  // namespace stepsim
