// Memory as each framework holds it (issue 46 item 1): torchtitan's FSDP2 (fp32 shards, gathered bf16 parameters, the
// root module kept gathered, the whole stage under a pipeline), ZeRO-3's gathered units (DeepSpeed's live-parameter
// cap), PyTorch's cross-entropy buffers (eager, loss_parallel, compiled), PyTorch's interleaved warm-up, the
// allocated / reserved peaks, and the measured peaks `validate` compares with. Parameter counts are worked by hand for
// the Llama-style job of llama(): h 1024, 16 heads of 64 with 4 KV groups, SwiGLU ffn 2816, 4 layers, vocabulary
// 32,000 (a multiple of 128: no padding), sequence 1024, micro-batch 1 (T = 1024 tokens), untied embeddings.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/validate/validation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/schedule.hpp"
#include "stepsim/workload/static_memory.hpp"
#include "stepsim/workload/working_memory.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace framework_memory_test {

// wq 1024^2 + wk, wv 1024 x 256 each + wo 1024^2 = 2,621,440; two norms 2,048; w1, w3, w2 3 x 1024 x 2816 = 8,650,752.
constexpr int64_t kLayer = 2'621'440 + 2'048 + 8'650'752;  // 11,274,240
constexpr int64_t kEmbedding = 32'000 * 1'024;              // 32,768,000, and the output layer the same
constexpr int64_t kRoot = 2 * kEmbedding + 1'024;           // embedding, output layer, final norm
constexpr int64_t kHead = kEmbedding + 1'024;               // output layer and final norm
constexpr int64_t T = 1024, V = 32000, H = 1024;

std::string llama(const std::string& training, const std::string& parallel = "data: 8", int gpus = 8,
                  const std::string& precision = "bf16", int global_batch = 16) {
  return "model: {name: tiny-llama, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, num_query_groups: 4,"
         " ffn_hidden_size: 2816, activation: swiglu, normalization: rmsnorm, vocab_size: 32000, seq_length: 1024}\n"
         "parallelism: {" + parallel + "}\n"
         "training: {micro_batch_size: 1, global_batch_size: " + std::to_string(global_batch) +
         ", precision: " + precision + ", " + training + "}\n"
         "simulation: {host_time_scale: 0}\n"
         "cluster: {gpu: H100-SXM, num_gpus: " + std::to_string(gpus) + "}\n";
}

workload::Workload build(const std::string& yaml) {
  return workload::build_megatron_workload(test::job_from_yaml(yaml));
}

const workload::Op* find_op(const workload::Program& p, const std::string& name, workload::Phase phase) {
  for (const workload::Op& op : p.ops) {
    if (p.name(op) == name && op.phase == phase) return &op;
  }
  return nullptr;
}

TEST(FrameworkMemory, Fsdp2KeepsFp32ShardsAndGathersTheHeadAndTwoLayers) {
  const workload::Workload w = build(llama("framework: torchtitan, zero_stage: 3"));
  const workload::Program& p = w.programs[0];
  constexpr int64_t P = 4 * kLayer + kRoot;
  ASSERT_EQ(p.dense_parameters, P);
  const workload::StaticMemory& m = p.static_memory;
  EXPECT_EQ(m.weights, 4 * P / 8);    // the fp32 shard is the master copy
  EXPECT_EQ(m.optimizer, 8 * P / 8);  // Adam's m and v
  EXPECT_EQ(m.gradients, 0);          // sharded fp32 gradients exist from the backward to the step only
  EXPECT_EQ(m.fp8_weight_cache, 0);
  // bf16: the final norm and output layer's unit (not resharded after forward), the running and the prefetched layer
  EXPECT_EQ(m.gathered, 2 * kHead + 2 * (2 * kLayer));
  // torchtitan before 2025-07-28: the root module held the embedding too.
  EXPECT_EQ(build(llama("framework: torchtitan, zero_stage: 3, fsdp_units: root")).programs[0].static_memory.gathered,
            2 * kRoot + 2 * (2 * kLayer));
  // ... and the optimizer step holds them: 4 bytes per parameter of the shard.
  const workload::Op* step = find_op(p, "optimizer_step", workload::Phase::Optimizer);
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->mem_alloc_at_start, 4 * (P / 8));
  // torchao casts weights at each use: no fp8 copies under fp8 either.
  EXPECT_EQ(build(llama("framework: torchtitan, zero_stage: 3, compile: true", "data: 8", 8, "fp8"))
                .programs[0].static_memory.fp8_weight_cache, 0);
}

// FSDP2 allocates the reduce-scatter outputs (the sharded fp32 gradients) in its reduce-scatter stream and the
// all-gathers' buffers in its all-gather stream; the caching allocator keeps each stream's freed blocks for that
// stream, so at the next activation peak they are reserved beside what the default stream holds.
TEST(FrameworkMemory, Fsdp2StreamPoolsHoldTheShardedGradientsAndTheLargestGather) {
  constexpr int64_t P = 4 * kLayer + kRoot;
  const workload::StaticMemory split =
      build(llama("framework: torchtitan, zero_stage: 3")).programs[0].static_memory;
  // 4 B per sharded parameter; the largest unit is the head (32,769,024 parameters, more than a layer's or the
  // embedding's): its bf16 all-gather output and this rank's eighth of it as input.
  EXPECT_EQ(split.stream_pools, 4 * P / 8 + 2 * kHead + 2 * kHead / 8);
  const workload::StaticMemory root =
      build(llama("framework: torchtitan, zero_stage: 3, fsdp_units: root")).programs[0].static_memory;
  EXPECT_EQ(root.stream_pools, 4 * P / 8 + 2 * kRoot + 2 * kRoot / 8);
  // Reserved, not allocated.
  EXPECT_EQ(split.total() - split.allocated() - split.overhead, split.allocator_reserve + split.stream_pools);
  // DDP (zero_stage 0) and Megatron-Core have no such streams.
  EXPECT_EQ(build(llama("framework: torchtitan, zero_stage: 0")).programs[0].static_memory.stream_pools, 0);
  EXPECT_EQ(build(llama("zero_stage: 3")).programs[0].static_memory.stream_pools, 0);
  // The key is torchtitan's.
  EXPECT_NE(test::job_error(llama("zero_stage: 3, fsdp_units: root")).find("training.fsdp_units: is how torchtitan"),
            std::string::npos);
}

TEST(FrameworkMemory, Fsdp2UnderAPipelineKeepsTheStageGatheredAndFp32GradientsUnsharded) {
  const workload::Workload w =
      build(llama("framework: torchtitan, distributed_optimizer: true", "pipeline: 2, data: 2", 4));
  const workload::Program& p = w.programs[0];  // two layers and the embedding
  constexpr int64_t P = 2 * kLayer + kEmbedding;
  ASSERT_EQ(p.dense_parameters, P);
  const workload::StaticMemory& m = p.static_memory;
  EXPECT_EQ(m.weights, 4 * P / 2);
  EXPECT_EQ(m.gathered, 2 * P);
  EXPECT_EQ(m.gradients, 4 * P);  // accumulated over the micro-batches in the reduction dtype
  EXPECT_EQ(m.optimizer, 8 * P / 2);
}

TEST(FrameworkMemory, ZeroThreeGathersTwoLayersAndDeepSpeedCapsItsLiveParameters) {
  constexpr int64_t P = 4 * kLayer + kRoot;
  const workload::Workload fsdp = build(llama("zero_stage: 3"));  // Megatron-FSDP: whole layers
  EXPECT_EQ(fsdp.programs[0].static_memory.gathered, 2 * (2 * kLayer));
  EXPECT_EQ(fsdp.programs[0].static_memory.weights, 2 * P / 8);
  // A 805 M-parameter layer (MHA 4 x 8192^2 + GELU MLP 2 x 8192 x 32768 + norms and biases): two of them exceed
  // DeepSpeed's stage3_max_live_parameters (1e9), which bounds what stays gathered.
  const std::string big =
      "model: {name: big, num_layers: 2, hidden_size: 8192, num_attention_heads: 64, ffn_hidden_size: 32768,"
      " vocab_size: 32000, seq_length: 512}\nparallelism: {data: 8}\n"
      "training: {micro_batch_size: 1, global_batch_size: 8, precision: bf16, zero_stage: 3, "
      "zero3_param_fetch: blocking}\ncluster: {gpu: A100-80GB, num_gpus: 8}\n";
  EXPECT_EQ(build(big).programs[0].static_memory.gathered, 2 * workload::kDeepSpeedMaxLiveParams);
}

TEST(FrameworkMemory, PyTorchCrossEntropyHoldsItsFp32BuffersAndTheCompiledLossOnlyTheBf16Logits) {
  using workload::Phase;
  struct Case {
    std::string training, parallel;
    int gpus;
    int64_t v;                         // logits per rank
    int64_t stored, forward, backward;  // bytes per local logit
  } cases[] = {
      // eager: log_softmax's fp32 output kept; the bf16 logits and the fp32 copy beside it; nll_loss's and
      // log_softmax's fp32 gradients
      {"framework: torchtitan, zero_stage: 3", "data: 8", 8, V, 4, 6, 8},
      // loss_parallel: also the shifted logits and their exponentials; the masked one-hot, exp and their sum
      {"framework: torchtitan, zero_stage: 3", "tensor: 2, data: 4, sequence_parallel: true", 8, V / 2, 4, 10, 12},
      // compiled: the bf16 logits kept, the bf16 gradient written
      {"framework: torchtitan, zero_stage: 3, compile: true", "data: 8", 8, V, 2, 0, 2},
      // Megatron-Core's unfused loss (measured, docs/MODEL.md 9): the fp32 softmax kept, the bf16 logits beside it
      {"distributed_optimizer: true", "data: 8", 8, V, 4, 2, 2},
  };
  for (const Case& c : cases) {
    const workload::Workload w = build(llama(c.training, c.parallel, c.gpus));
    const workload::Program& p = w.programs[0];
    const workload::Op* fwd = find_op(p, "cross_entropy_max", Phase::Forward);
    const workload::Op* bwd = find_op(p, "cross_entropy_bwd", Phase::Backward);
    ASSERT_TRUE(fwd && bwd) << c.training;
    EXPECT_EQ(fwd->mem_alloc_at_start - fwd->mem_transient, c.stored * T * c.v) << c.training;
    // + the gathered input, except under torchtitan's TP, where it is the output layer's saved input
    const bool dtensor_tp =
        c.parallel.find("tensor: 2") != std::string::npos && c.training.rfind("framework: torchtitan", 0) == 0;
    EXPECT_EQ(fwd->mem_transient, c.forward * T * c.v + (dtensor_tp ? 0 : 2 * T * H)) << c.training;
    EXPECT_EQ(bwd->mem_transient, c.backward * T * c.v) << c.training;
  }
  // torchtitan before 2025-04 left the loss eager under compile.
  const workload::Workload old =
      build(llama("framework: torchtitan, zero_stage: 3, compile: true, compile_loss: false"));
  EXPECT_EQ(find_op(old.programs[0], "cross_entropy_bwd", Phase::Backward)->mem_transient, 8 * T * V);
  EXPECT_NE(test::job_error(llama("framework: torchtitan, zero_stage: 3, compile_loss: true"))
                .find("training.compile_loss: needs compile: true"),
            std::string::npos);
}

TEST(FrameworkMemory, PyTorchsInterleavedScheduleKeepsItsWarmupWhenMicroBatchesEqualStages) {
  using spec::PipelineSchedule;
  const int p = 4, v = 2, m = 4;
  for (int r = 0; r < p; ++r) {
    // Megatron runs every forward first when m == p; PyTorch's ScheduleInterleaved1F1B: (v - 1) m + 2 (p - 1 - r),
    // at most m v.
    EXPECT_EQ(workload::warmup_steps(PipelineSchedule::Interleaved1F1B, r, p, v, m), m * v);
    EXPECT_EQ(workload::warmup_steps(PipelineSchedule::Interleaved1F1B, r, p, v, m, false, false),
              std::min((v - 1) * m + 2 * (p - 1 - r), m * v));
  }
  spec::TrainingSpec t;
  t.framework = spec::Framework::Torchtitan;
  EXPECT_FALSE(workload::all_forwards_first(t));
  // The last rank's last chunk then holds one micro-batch at a time, not all of them.
  const std::string layout = "pipeline: 2, virtual_stages: 2, schedule: interleaved-1f1b, data: 2";
  // Global batch 4 over 2 data-parallel ranks: m = 2 = p.
  const workload::Workload tt =
      build(llama("framework: torchtitan, distributed_optimizer: true, recompute: full", layout, 4, "bf16", 4));
  const workload::Workload mc = build(llama("distributed_optimizer: true, recompute: full", layout, 4, "bf16", 4));
  EXPECT_LT(tt.programs[1].stored_activation_peak, mc.programs[1].stored_activation_peak);
}

TEST(FrameworkMemory, SimulateGivesAllocatedAndReservedBesideTheDevicePeak) {
  const auto cat = catalog::shipped();
  const sim::Simulation s =
      sim::run_simulation(cat, test::job_from_yaml(llama("framework: torchtitan, zero_stage: 3")), {0});
  const report::Summary sum = report::summarize(s, 0);
  const workload::StaticMemory& m = s.workload.programs[0].static_memory;
  const report::StageMemory& st = sum.per_stage[0];
  EXPECT_EQ(st.reserved_bytes, st.peak_bytes - m.overhead);  // PyTorch's counters leave out the CUDA context and NCCL
  EXPECT_EQ(st.allocated_bytes, st.reserved_bytes - m.allocator_reserve - m.stream_pools);
  EXPECT_GT(m.stream_pools, 0);
  // torchtitan's launcher sets expandable segments: 1.13 % of the activation peak reserved beyond it.
  EXPECT_EQ(m.allocator_reserve, std::llround(0.0113 * double(s.workload.programs[0].activation_peak)));
  ASSERT_TRUE(sum.reserved_interval_bytes);
  const auto band = *workload::memory_band(spec::Framework::Torchtitan);
  EXPECT_DOUBLE_EQ((*sum.reserved_interval_bytes)[0], double(sum.peak_reserved_bytes_max) / (1 + band.high));
  const nlohmann::json j = report::to_json(sum, s.workload.job);
  EXPECT_EQ(j["memory"]["peak_reserved_bytes"].get<int64_t>(), st.reserved_bytes);
  EXPECT_EQ(j["memory"]["per_stage"][0]["stream_pool_bytes"].get<int64_t>(), m.stream_pools);
  EXPECT_NE(report::to_text(sum, s.workload.job).find("reserved holds FSDP2's stream pools, up to"), std::string::npos);
  // No band for Megatron-Core: no development run reports its peak.
  const sim::Simulation mc = sim::run_simulation(cat, test::job_from_yaml(llama("distributed_optimizer: true")), {0});
  const report::Summary mcs = report::summarize(mc, 0);
  EXPECT_FALSE(mcs.reserved_interval_bytes);
  // and says so, in the text and the JSON
  EXPECT_EQ(mcs.memory_no_interval, "no 80% interval for the peak: no measured megatron peaks in the development runs");
  EXPECT_EQ(report::to_json(mcs, mc.workload.job)["memory"]["no_interval"].get<std::string>(), mcs.memory_no_interval);
  EXPECT_TRUE(sum.memory_no_interval.empty());
}

TEST(FrameworkMemory, NotesStateAPeakOnceOrNot) {
  std::string from;
  EXPECT_DOUBLE_EQ(*validate::peak_memory_in_notes("Table 1. Memory 82.4 GiB. Hardware", &from), 82.4 * 1073741824.0);
  EXPECT_EQ(from, "notes: 'Memory 82.4 GiB'");
  EXPECT_DOUBLE_EQ(*validate::peak_memory_in_notes("Row: bf16, peak memory 33.71 GB.", &from), 33.71e9);
  EXPECT_FALSE(validate::peak_memory_in_notes("SymmetricMemory 4 GiB", &from));  // not the word Memory
  EXPECT_FALSE(validate::peak_memory_in_notes("Memory 70 GiB at first, Memory 72 GiB later", &from));
  EXPECT_TRUE(from.empty());
  EXPECT_FALSE(validate::peak_memory_in_notes("Memory 1234567 GiB", &from));  // more digits than a figure has
  EXPECT_DOUBLE_EQ(*validate::peak_memory_in_notes("Row: peak memory 33.71 GB", &from), 33.71e9);
  EXPECT_EQ(from, "notes: 'peak memory 33.71 GB'");  // named from "peak", one figure
  EXPECT_FALSE(validate::peak_memory_in_notes("Memory 12.34567 GiB", &from));  // more decimals than a figure has
  EXPECT_FALSE(validate::peak_memory_in_notes("Memory 80 GBs", &from));        // the unit ends a word
  EXPECT_FALSE(validate::peak_memory_in_notes("Memory  80 GiB", &from));       // one space each side
  EXPECT_DOUBLE_EQ(*validate::peak_memory_in_notes("MEMORY 5 gib", &from), 5e9);  // any case; only "GiB" is 2^30
  // torchtitan logs only GiB ("memory: 33.71GiB"), which torchao's tables copy under "Peak Memory (GB)".
  EXPECT_DOUBLE_EQ(*validate::peak_memory_in_notes("Row: peak memory 33.71 GB", &from, true), 33.71 * 1073741824.0);
  EXPECT_EQ(from, "notes: 'peak memory 33.71 GB' (GiB as logged)");
}

// The B200 rows of the Blackwell file quote torchao's "Peak Memory (GB)" table, which its parse_torchtitan_logs.py fills
// from torchtitan's "memory: <x>GiB" log line: read as GiB.
TEST(FrameworkMemory, TorchtitansLoggedPeaksAreGibWhateverTheTableCallsThem) {
  const auto runs = validate::read_published_runs(test::published_runs("published_runs_blackwell.csv"));
  int read = 0;
  for (const auto& r : runs) {
    if (r.id != "TT-B200pl-Llama3-8B-8-bf16") continue;
    ASSERT_TRUE(r.peak_memory_bytes);
    EXPECT_DOUBLE_EQ(*r.peak_memory_bytes, 33.71 * 1073741824.0);
    EXPECT_EQ(r.peak_memory_from, "notes: 'peak memory 33.71 GB' (GiB as logged)");
    ++read;
  }
  EXPECT_EQ(read, 1);
}

// The band `simulate` prints for torchtitan's reserved peak is the 10th..90th percentile of the errors of every
// development run that reports its peak (published_runs_2.csv and published_runs_blackwell.csv), recomputed here.
TEST(FrameworkMemory, TheTorchtitanBandIsItsMeasuredPeaksErrors) {
  const auto cat = catalog::shipped();
  std::vector<double> errors;
  for (const char* file : {"published_runs_2.csv", "published_runs_blackwell.csv"}) {
    const auto runs = validate::read_published_runs(test::published_runs(file));
    validate::ValidationOptions o;
    for (const auto& r : runs) {
      if (r.peak_memory_bytes && r.framework == "torchtitan") o.only_ids.push_back(r.id);
    }
    const validate::ValidationResult res = validate::validate_runs(cat, runs, o);
    EXPECT_TRUE(res.failed.empty());
    EXPECT_TRUE(res.not_fit.empty()) << file;
    int within = 0;
    for (const auto& row : res.rows) {
      ASSERT_TRUE(row.measured_memory_bytes) << row.id;
      errors.push_back(row.memory_error);
      within += std::abs(row.memory_error) <= 0.10;
    }
    EXPECT_EQ(res.memory_within_10_percent, within) << file;  // what validate prints as "N within 10%"
  }
  ASSERT_EQ(errors.size(), 17u);
  const auto band = *workload::memory_band(spec::Framework::Torchtitan);
  EXPECT_EQ(band.runs, 17);
  EXPECT_NEAR(band.low, validate::quantile(errors, 0.1), 0.0005);
  EXPECT_NEAR(band.high, validate::quantile(errors, 0.9), 0.0005);
}

TEST(FrameworkMemory, APeakMemoryColumnIsComparedWithTheReservedPeak) {
  const std::string csv = test::write_temp(
      "memory_runs.csv",
      "id,source,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,gpu,num_gpus,gpus_per_node,tp,pp,"
      "global_batch,precision,recompute,step_time_s,zero_stage,framework,peak_memory_GiB,notes\n"
      "m1,test,Llama-tiny,4,1024,16,4,2816,32000,1024,H100-SXM,8,8,1,1,16,bf16,selective,1.0,3,torchtitan,20,"
      "Memory 99 GiB (the column wins)\n");
  const auto runs = validate::read_published_runs(csv);
  ASSERT_TRUE(runs[0].peak_memory_bytes);
  EXPECT_DOUBLE_EQ(*runs[0].peak_memory_bytes, 20.0 * 1073741824.0);
  EXPECT_EQ(runs[0].peak_memory_from, "column peak_memory_GiB");
  const validate::ValidationResult r = validate::validate_runs(catalog::shipped(), runs);
  ASSERT_EQ(r.rows.size(), 1u);
  const auto& row = r.rows[0];
  const double measured = 20.0 * 1073741824.0;
  EXPECT_DOUBLE_EQ(row.memory_error, (double(row.predicted_reserved_bytes) - measured) / measured);
  EXPECT_EQ(r.memory.rows, 1);
}

}  // namespace framework_memory_test
}  // namespace stepsim
