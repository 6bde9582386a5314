// The Megatron workload builder's parts on their own (src/stepsim/workload/megatron/): the features resolved from a
// job, a stage's shape, the emitter's tagging and memory accounting driven by context values, and the combined 1F1B
// order keys. Expected values are worked out by hand from the job in each test.
#include <gtest/gtest.h>

#include "stepsim/workload/megatron/combined_order.hpp"
#include "stepsim/workload/megatron/emitter.hpp"
#include "stepsim/workload/megatron/features.hpp"
#include "stepsim/workload/megatron/stage_shape.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

using namespace workload::megatron;
using workload::ComputeCategory;
using workload::Phase;
using workload::Program;

// A small job on `gpus` GPUs (β = 2: activations stay bf16 under fp8 too).
spec::JobSpec parts_job(const std::string& training, const std::string& parallel = "data: 1", int gpus = 1) {
  return test::job_from_yaml(
      "model: {name: g, num_layers: 4, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
      " vocab_size: 32000, seq_length: 1024}\n"
      "parallelism: {" + parallel + "}\n"
      "training: {micro_batch_size: 1, global_batch_size: 2" + training + "}\n"
      "cluster: {gpu: H100-SXM, num_gpus: " + std::to_string(gpus) + ", gpus_per_node: 8}\n");
}

// Everything an emitter needs for stage 0 of a job.
struct PartsBench {
  explicit PartsBench(const spec::JobSpec& j)
      : job(j),
        d(workload::make_dims(job)),
        layout(workload::job_rank_layout(job)),
        f(Features::resolve(job, d.sp, d.act_bytes)),
        shape(StageShape::of(job, 0)),
        facts{job, d, layout, f, shape},
        em(prog, layout, f) {}
  Context cx(Phase phase = Phase::Forward, int layer = 0, int mb = 0) const {
    Context c{&facts};
    c.at = Position{phase, layer, mb, 0};
    return c;
  }
  spec::JobSpec job;
  workload::ModelDims d;
  workload::RankLayout layout;
  Features f;
  StageShape shape;
  StageFacts facts;
  Program prog;
  Emitter em;
};

TEST(BuilderParts, FeaturesTurnUserbuffersOnOnlyUnderSequenceParallelism) {
  const auto with_sp = parts_job(", tp_comm_overlap: true", "tensor: 2, sequence_parallel: true", 2);
  const Features on = Features::resolve(with_sp, true, 2);
  EXPECT_TRUE(on.tp_overlap_ag);
  EXPECT_TRUE(on.tp_overlap_rs);
  // TE's defaults: bulk dgrad and wgrad overlaps; the pipelined dgrad reduce-scatter replaces the bulk wgrad one.
  EXPECT_TRUE(on.tp_bulk_wgrad);
  EXPECT_FALSE(Features::resolve(parts_job(", tp_comm_overlap: true, tp_comm_overlap_rs_dgrad: true",
                                         "tensor: 2, sequence_parallel: true", 2),
                                 true, 2)
                   .tp_bulk_wgrad);
  const Features off = Features::resolve(with_sp, false, 2);
  EXPECT_FALSE(off.tp_overlap_ag || off.tp_overlap_rs || off.tp_bulk_dgrad || off.tp_bulk_wgrad);
}

TEST(BuilderParts, FeaturesFp8CastBytesFollowTheRecipe) {
  // Delayed scaling: read β, write the fp8 copy and its transpose (2 x 1 byte); current scaling reads β once more.
  EXPECT_EQ(Features::resolve(parts_job(", precision: fp8, fp8_recipe: delayed"), false, 2).fp8_cast_bytes, 4);
  EXPECT_EQ(Features::resolve(parts_job(", precision: fp8, fp8_recipe: current"), false, 2).fp8_cast_bytes, 6);
  EXPECT_FALSE(Features::resolve(parts_job(""), false, 2).fp8);
}

TEST(BuilderParts, StageShapeSplitsModelChunksOverStagesRoundRobin) {
  // 16 layers as model chunks [3, 5, 2, 6] over 2 stages x 2 chunks: model chunk k = chunk * p + stage.
  const auto job = test::job_from_yaml(
      "model: {name: g, num_layers: 16, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
      " vocab_size: 32000, seq_length: 1024, mtp_layers: 1}\n"
      "parallelism: {pipeline: 2, virtual_stages: 2, pipeline_layers: [3, 5, 2, 6]}\n"
      "training: {micro_batch_size: 1, global_batch_size: 4}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 2, gpus_per_node: 2}\n");
  const StageShape s0 = StageShape::of(job, 0), s1 = StageShape::of(job, 1);
  EXPECT_EQ(s0.chunk_first_layer, (std::vector<int>{0, 8}));
  EXPECT_EQ(s0.chunk_layers, (std::vector<int>{3, 2}));
  EXPECT_EQ(s1.chunk_first_layer, (std::vector<int>{3, 10}));
  EXPECT_EQ(s1.chunk_layers, (std::vector<int>{5, 6}));
  EXPECT_EQ(s0.units_of(0, true), (std::vector<int>{kEmbeddingUnit, 0, 1, 2}));
  EXPECT_EQ(s0.units_of(1, true), (std::vector<int>{8, 9}));
  // The last stage's last chunk ends with the MTP depth (unit 16) and the head; backward visits them first.
  EXPECT_EQ(s1.units_of(1, false), (std::vector<int>{kHeadUnit, 16, 15, 14, 13, 12, 11, 10}));
  EXPECT_TRUE(s1.mtp_unit(16));
  EXPECT_FALSE(s1.mtp_unit(15));
}

TEST(BuilderParts, EmitterTagsOpsWithTheContextTheyAreBuiltIn) {
  PartsBench b(parts_job(""));
  const Context fwd = b.cx(Phase::Forward, 2, 5);
  b.em.compute(fwd, memop(ComputeCategory::Norm, 100), "a", {}, 64);
  // A recompute of layer 3 inside the same micro-batch, as layer_bwd passes it down: tagged so, nothing toggled back.
  b.em.compute(fwd.in(Phase::Recompute).on_layer(3), memop(ComputeCategory::Norm, 100), "b", {});
  b.em.compute(fwd, memop(ComputeCategory::Norm, 100), "c", {});
  ASSERT_EQ(b.prog.ops.size(), 3u);
  EXPECT_EQ(b.prog.ops[0].phase, Phase::Forward);
  EXPECT_EQ(b.prog.ops[0].layer, 2);
  EXPECT_EQ(b.prog.ops[0].microbatch, 5);
  EXPECT_EQ(b.prog.ops[1].phase, Phase::Recompute);
  EXPECT_EQ(b.prog.ops[1].layer, 3);
  EXPECT_EQ(b.prog.ops[2].phase, Phase::Forward);
  EXPECT_EQ(b.prog.ops[2].layer, 2);
}

TEST(BuilderParts, EmitterStoresOnlyWhereTheContextStores) {
  PartsBench b(parts_job(""));
  b.em.start_unit();
  b.em.compute(b.cx(), memop(ComputeCategory::Norm, 10), "kept", {}, 1000);
  b.em.compute(b.cx().not_storing(), memop(ComputeCategory::Norm, 10), "discarded", {}, 500);
  EXPECT_EQ(b.prog.ops[0].mem_alloc_at_start, 1000);
  EXPECT_EQ(b.prog.ops[1].mem_alloc_at_start, 0);
  EXPECT_EQ(b.em.unit_saved(), 1000);
  // A checkpoint charged ahead goes to the next compute op, stored even where the op itself discards.
  b.em.alloc_at_next(300);
  b.em.compute(b.cx().not_storing(), memop(ComputeCategory::Norm, 10), "checkpointed", {}, 500);
  EXPECT_EQ(b.prog.ops[2].mem_alloc_at_start, 300);
  EXPECT_EQ(b.em.unit_saved(), 1300);
}

TEST(BuilderParts, EmitterCastsFp8GemmInputsButNotWeightGradientOperands) {
  PartsBench b(parts_job(", precision: fp8, fp8_recipe: delayed", "data: 2", 2));
  const Context cx = b.cx(Phase::Forward, 1);
  // A GEMM of 1024 x 512 x 256: its A operand (m x k = 1024 x 256 elements) cast at 4 bytes per element first; the
  // wait issued ahead (a parameter gather on the DP stream) goes to the cast, the first op issued.
  b.em.wait_at_next(b.em.coll(cx, workload::CollType::AllGather, workload::GroupKind::Dp, 1 << 20, "gather", {}));
  b.em.compute(cx, gemm(cx, 1024, 512, 256), "fc", {}, 2 * 1024 * 256);
  ASSERT_EQ(b.prog.ops.size(), 3u);
  EXPECT_EQ(b.prog.name(b.prog.ops[1]), "fc_fp8_cast");
  EXPECT_EQ(b.prog.ops[1].bytes, 4u * 1024 * 256);
  EXPECT_EQ(b.prog.ops[1].wait_count, 1);
  EXPECT_EQ(b.prog.ops[2].wait_count, 0);
  // TE saves the fp8 copy for the weight gradient: 1 byte per element, not β.
  EXPECT_EQ(b.prog.ops[2].mem_alloc_at_start, 1024 * 256);
  b.em.compute(cx.as_wgrad(), gemm(cx, 256, 512, 1024), "fc_wgrad", {});
  EXPECT_EQ(b.prog.ops.size(), 4u);
  // Kept in bf16 (the output layer's context): no cast either.
  b.em.compute(cx.keeping_bf16(), gemm(cx.keeping_bf16(), 1024, 512, 256), "output_layer", {});
  EXPECT_EQ(b.prog.ops.size(), 5u);
}

TEST(BuilderParts, EmitterSkipsCollectivesOfGroupsOfOne) {
  PartsBench b(parts_job("", "data: 2", 2));
  const auto dep = b.em.compute(b.cx(), memop(ComputeCategory::Norm, 10), "x", {});
  const auto r = b.em.coll(b.cx(), workload::CollType::AllReduce, workload::GroupKind::Tp, 1 << 20, "tp", dep);
  EXPECT_EQ(r.stream, dep.stream);
  EXPECT_EQ(r.count, dep.count);
  EXPECT_EQ(b.prog.ops.size(), 1u);
  b.em.coll(b.cx(), workload::CollType::AllReduce, workload::GroupKind::Dp, 1 << 20, "dp", dep);
  EXPECT_EQ(b.prog.ops.size(), 2u);
  EXPECT_EQ(b.prog.ops[1].stream, workload::Stream::Dp);
}

TEST(BuilderParts, CombinedOrderKeysPutTheBackwardHalfBetweenTheForwardNodes) {
  CombinedOrder o;
  o.begin();
  o.start_unit(0, Piece::Pre);  // forward, layer slot 0: key 16 + 3
  o.on_op();
  o.node(Phase::Forward, Piece::Combine, false);  // 16 + 9
  o.on_op();
  o.node(Phase::Backward, Piece::Mlp, false);  // a backward-direction op in the forward half: no change
  o.on_op();
  o.begin_backward_half();
  o.start_unit(0, Piece::Post);  // backward slot 0, Post: 16 + 1
  o.on_op();
  o.node(Phase::Backward, Piece::Mlp, true);  // 16 + 4: between the forward's pre (3) and its experts (8)
  o.on_op();
  o.end();
  o.on_op();  // not recorded
  EXPECT_EQ(o.keys(), (std::vector<int64_t>{19, 25, 25, 17, 20}));
  EXPECT_EQ(o.backward_start(), 3u);
}

// Each op carries the unit whose pass built it; what runs between units (ZeRO-3's gathers, the reduce-scatters after a
// unit's backward, exchanges, the optimizer) carries none. The embedding's ops are exactly those the planner's probe
// used to find by name.
TEST(BuilderParts, OpsCarryTheUnitWhosePassBuiltThem) {
  const auto job = test::job_from_yaml(test::small_gpt_yaml(1, 2, 2, 8, "", ", zero_stage: 3"));
  const workload::Workload w = workload::build_megatron_workload(job);
  std::map<std::string, int> units_of[5];
  for (const Program& p : w.programs) {
    for (const workload::Op& op : p.ops) {
      const std::string& name = p.name(op);
      units_of[static_cast<int>(op.unit)][name]++;
      EXPECT_EQ(op.unit == workload::UnitKind::Embedding, op.layer < 0 && name.rfind("embedding", 0) == 0) << name;
    }
  }
  const auto none = units_of[static_cast<int>(workload::UnitKind::None)];
  EXPECT_TRUE(none.count("zero3_param_all_gather"));
  EXPECT_TRUE(none.count("sharded_grad_reduce_scatter"));
  EXPECT_TRUE(none.count("optimizer_step"));
  EXPECT_FALSE(none.count("qkv_proj"));
  EXPECT_TRUE(units_of[static_cast<int>(workload::UnitKind::Layer)].count("qkv_proj"));
  EXPECT_TRUE(units_of[static_cast<int>(workload::UnitKind::Head)].count("output_layer"));
  EXPECT_TRUE(units_of[static_cast<int>(workload::UnitKind::Embedding)].count("embedding_bwd"));
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

std::string op_limit_error(int layers, int global_batch) {
  try {
    workload::build_megatron_workload(test::job_from_yaml(
        "model: {name: m, num_layers: " + std::to_string(layers) +
        ", hidden_size: 64, num_attention_heads: 4, ffn_hidden_size: 256, vocab_size: 1000, seq_length: 128}\n"
        "training: {micro_batch_size: 1, global_batch_size: " + std::to_string(global_batch) + "}\n"
        "cluster: {gpu: H100-SXM, num_gpus: 1}\n"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(BuilderParts, OpLimitNamesTheKeyOutOfTheOrdinary) {
  // About 40 ops per layer and micro-batch, 8,000,000 per rank at most. 4 micro-batches of 100,000 layers: the layers
  // are what is out of the ordinary (the message named global_batch_size before). 300,000 micro-batches of 2 layers:
  // the batch.
  const std::string layers = op_limit_error(100000, 4);
  EXPECT_NE(layers.find("key model.num_layers: about 16000320 ops per rank (4 micro-batches x 100000 layers per stage)"),
            std::string::npos) << layers;
  EXPECT_NE(layers.find("split the layers over more pipeline stages"), std::string::npos) << layers;
  const std::string batch = op_limit_error(2, 300000);
  EXPECT_NE(batch.find("key training.global_batch_size: about 48000000 ops per rank (300000 micro-batches x 2 layers"),
            std::string::npos) << batch;
}

}  // namespace
}  // namespace stepsim
