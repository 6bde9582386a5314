// Working buffers and the allocator's reserve (docs/MODEL.md §9, "Working buffers"), checked against what PyTorch's
// allocator reported for Megatron-Core's own layers on an H100 (data/measurements/h100-sxm/memory*.csv, made by
// bench/gpu/measure_memory.py): the memory a rank needs above its stored activations while a layer or the loss runs.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "stepsim/io/csv_table.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/working_memory.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

// Measured rows by (case, layers): the transient peaks in bytes.
struct Measured {
  double fwd = 0, bwd = 0;
};
std::map<std::pair<std::string, int>, Measured> measured() {
  std::map<std::pair<std::string, int>, Measured> out;
  for (const char* file : {"memory.csv", "memory2.csv"}) {
    const cost::CsvTable t =
        cost::parse_csv(test::read_file(test::source_dir() + "/data/measurements/h100-sxm/" + file), file);
    const int c = t.column("case"), l = t.column("layers"), f = t.column("transient_fwd_bytes"),
              b = t.column("transient_bwd_bytes");
    for (const auto& r : t.rows) {
      if (r.fields[static_cast<size_t>(f)].empty()) continue;  // the fragmentation rows
      out[{r.fields[static_cast<size_t>(c)], std::stoi(r.fields[static_cast<size_t>(l)])}] =
          Measured{std::stod(r.fields[static_cast<size_t>(f)]), std::stod(r.fields[static_cast<size_t>(b)])};
    }
  }
  return out;
}

// Llama-3 8B's layer (h 4,096, 32 query heads on 8 KV heads, SwiGLU FFN 14,336), one TP rank's share of heads and FFN.
std::string llama8b(int layers, int seq, int tp, const std::string& extra_training = "") {
  return "model: {name: l8, num_layers: " + std::to_string(layers) +
         ", hidden_size: 4096, num_attention_heads: 32, num_query_groups: 8, ffn_hidden_size: 14336,"
         " activation: swiglu, normalization: rmsnorm, add_bias_linear: false, hidden_dropout: 0, vocab_size: 128256,"
         " seq_length: " + std::to_string(seq) + "}\n"
         "parallelism: {tensor: " + std::to_string(tp) + ", pipeline: 1, data: 1}\n"
         "training: {micro_batch_size: 1, global_batch_size: 1, precision: bf16" + extra_training + "}\n"
         "cluster: {gpu: H100-SXM, num_gpus: " + std::to_string(tp) +
         ", gpus_per_node: 8, intra_node: {bandwidth_GBps: 450}, inter_node: {bandwidth_Gbps: 400}}\n";
}

// The working buffers the builder puts on layer 0's forward and backward ops, and on the head's.
struct Buffers {
  int64_t layer_fwd = 0, layer_bwd = 0, head_fwd = 0, head_bwd = 0;
  int layer_fwd_ops = 0, layer_bwd_ops = 0;
};
Buffers buffers(const workload::Program& p) {
  Buffers b;
  for (const auto& op : p.ops) {
    if (op.mem_transient == 0 || op.microbatch != 0 || op.phase == workload::Phase::Recompute) continue;
    const bool fwd = op.phase == workload::Phase::Forward;
    if (op.layer == 0) {
      (fwd ? b.layer_fwd : b.layer_bwd) += op.mem_transient;
      ++(fwd ? b.layer_fwd_ops : b.layer_bwd_ops);
    } else if (op.layer < 0) {
      (fwd ? b.head_fwd : b.head_bwd) += op.mem_transient;
    }
  }
  return b;
}

// A layer holds 3 β T h more than it stores at the end of its forward, and 6 β T h + 128 MiB at the start of its
// backward, whatever the TP shard: within 1 % of every measured row (forward exactly: 100,663,296 B = 3 x 2 x 4,096 x
// 4,096 at 4K tokens; backward 335,561,216 B at 4K against 335,544,320 modelled, 541,082,112 at 8K against
// 536,870,912).
TEST(WorkingMemory, LayerBuffersMatchTheH100Measurement) {
  const auto m = measured();
  struct Case {
    const char* name;
    int seq, tp;
  };
  for (const Case c : {Case{"llama3-8b-layers-4k", 4096, 1}, Case{"llama3-8b-layers-8k", 8192, 1},
                       Case{"llama3-8b-tp2-shard-8k", 8192, 2}, Case{"llama3-8b-tp4-shard-8k", 8192, 4},
                       Case{"llama3-8b-tp8-shard-8k", 8192, 8}}) {
    ASSERT_TRUE(m.count({c.name, 1})) << c.name;
    const Measured got = m.at({c.name, 1});
    // Without sequence parallelism, as the measurement ran (one GPU); SP's all-gather holds the same full-width input.
    const auto w = workload::build_megatron_workload(test::job_from_yaml(llama8b(1, c.seq, c.tp)));
    const Buffers b = buffers(w.programs[0]);
    const double bth = 2.0 * c.seq * 4096;
    EXPECT_EQ(b.layer_fwd_ops, 1) << c.name;
    EXPECT_EQ(b.layer_bwd_ops, 1) << c.name;
    EXPECT_EQ(b.layer_fwd, int64_t(3 * bth)) << c.name;
    EXPECT_EQ(b.layer_bwd, int64_t(6 * bth) + (int64_t{128} << 20)) << c.name;
    EXPECT_NEAR(double(b.layer_fwd), got.fwd, 0.01 * got.fwd) << c.name;
    EXPECT_NEAR(double(b.layer_bwd), got.bwd, 0.01 * got.bwd) << c.name;
  }
  // The MoE layer (one EP-8 rank's share of Qwen3-30B-A3B, h 2,048, 8K tokens) measured the same multiples.
  const Measured moe = m.at({"qwen3-30b-a3b-ep8-layers-8k", 1});
  const double bth = 2.0 * 8192 * 2048;
  EXPECT_NEAR(3 * bth, moe.fwd, 0.01 * moe.fwd);
  EXPECT_NEAR(6 * bth + double(int64_t{128} << 20), moe.bwd, 0.01 * moe.bwd);
}

// The loss: Megatron-Core's default cross-entropy casts the bf16 logits to fp32 (kept as the softmax for backward), so
// the bf16 logits and the output layer's input are held beside it in forward, and the bf16 gradient beside the fp32
// softmax in backward. Measured on a 1-layer GPTModel at 8K tokens x 128,256 logits: forward 2,168,586,240 B above the
// stored activations, modelled 2 x 8,192 x (128,256 + 4,096) = 2,168,455,168; backward 2,101,347,328, modelled 2 x
// 8,192 x 128,256 = 2,101,346,304.
TEST(WorkingMemory, LogitsBuffersMatchTheH100Measurement) {
  const Measured got = measured().at({"llama3-8b-gpt-8k", 1});
  const auto w = workload::build_megatron_workload(test::job_from_yaml(llama8b(1, 8192, 1)));
  const Buffers b = buffers(w.programs[0]);
  EXPECT_EQ(b.head_fwd, int64_t{2} * 8192 * (128256 + 4096));
  EXPECT_EQ(b.head_bwd, int64_t{2} * 8192 * 128256);
  EXPECT_NEAR(double(b.head_fwd), got.fwd, 1e-3 * got.fwd);
  EXPECT_NEAR(double(b.head_bwd), got.bwd, 1e-3 * got.bwd);
  // The whole model's peak above what it stores is the forward's logits (at the loss, everything is stored):
  // the measured forward transient of the GPTModel, to 0.01 %.
  const auto& p = w.programs[0];
  EXPECT_NEAR(double(p.activation_peak - p.stored_activation_peak), got.fwd, 1e-4 * got.fwd);
}

// Full recompute stores only the layer's input, but the layer still runs with its working buffers: forward once as it
// runs the first time, once as it re-runs in backward, then the backward's.
TEST(WorkingMemory, RecomputedLayersStillHoldTheirBuffers) {
  const auto w = workload::build_megatron_workload(test::job_from_yaml(llama8b(2, 4096, 1, ", recompute: full")));
  const double bth = 2.0 * 4096 * 4096;
  int64_t recompute = 0;
  for (const auto& op : w.programs[0].ops) {
    if (op.layer == 0 && op.phase == workload::Phase::Recompute) recompute += op.mem_transient;
  }
  EXPECT_EQ(recompute, int64_t(3 * bth));
  const Buffers b = buffers(w.programs[0]);
  EXPECT_EQ(b.layer_fwd, int64_t(3 * bth));
  EXPECT_EQ(b.layer_bwd, int64_t(6 * bth) + (int64_t{128} << 20));
}

// The allocator's reserve: 3.9 % of the activation peak for fixed shapes (measured 1.0324 reserved/allocated over a
// 1F1B loop of Llama-3 8B layers: 699,525,120 B over 18.1 GB of activations), 5.6 % with dropless MoE routing (the
// experts' rows change every micro-batch: 477,498,368 B over 8.5 GB), 3.9 % again when the experts' buffers are padded
// to a fixed capacity. `stepsim memory` prints it and counts it in the peak, as the engine does.
TEST(WorkingMemory, AllocatorReserveFollowsTheActivationPeak) {
  const auto dense = workload::build_megatron_workload(test::job_from_yaml(llama8b(2, 4096, 1)));
  const auto& p = dense.programs[0];
  EXPECT_EQ(p.static_memory.allocator_reserve, std::llround(0.039 * double(p.activation_peak)));
  const std::string moe_model =
      "model: {name: m, num_layers: 2, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
      " vocab_size: 32000, seq_length: 1024, moe: {num_experts: 8, topk: 2, ffn_hidden_size: 1024";
  const std::string rest = "}}\nparallelism: {tensor: 1, pipeline: 1, data: 8, expert: 8}\n"
                           "training: {micro_batch_size: 1, global_batch_size: 8}\n"
                           "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8, intra_node: {bandwidth_GBps: 450},"
                           " inter_node: {bandwidth_Gbps: 400}}\n";
  const auto dropless = workload::build_megatron_workload(test::job_from_yaml(moe_model + rest));
  EXPECT_EQ(dropless.programs[0].static_memory.allocator_reserve,
            std::llround(0.056 * double(dropless.programs[0].activation_peak)));
  const auto padded = workload::build_megatron_workload(
      test::job_from_yaml(moe_model + ", capacity_factor: 1.0, pad_to_capacity: true" + rest));
  EXPECT_EQ(padded.programs[0].static_memory.allocator_reserve,
            std::llround(0.039 * double(padded.programs[0].activation_peak)));

  const std::string path = test::write_temp("working.yaml", llama8b(2, 4096, 1));
  const std::string out = test::temp_dir() + "working.json";
  const auto r = test::run_cli("memory " + path + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("working"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("allocator"), std::string::npos) << r.output;
  const auto st = nlohmann::json::parse(test::read_file(out))["per_stage"][0];
  EXPECT_EQ(st["allocator_reserve_bytes"].get<int64_t>(), p.static_memory.allocator_reserve);
  EXPECT_EQ(st["working_buffer_bytes"].get<int64_t>(), p.activation_peak - p.stored_activation_peak);
  EXPECT_EQ(st["stored_activation_bytes"].get<int64_t>() + st["working_buffer_bytes"].get<int64_t>(),
            st["activation_bytes"].get<int64_t>());
  EXPECT_EQ(st["static_bytes"].get<int64_t>() + st["activation_bytes"].get<int64_t>(), st["peak_bytes"].get<int64_t>());
  const auto sim = sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(llama8b(2, 4096, 1)), {});
  EXPECT_EQ(sim.result.peak_bytes[0], st["peak_bytes"].get<int64_t>());
}

}  // namespace
}  // namespace stepsim
