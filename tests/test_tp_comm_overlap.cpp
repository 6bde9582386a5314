// TP communication overlap (issue 13 item 1a, Transformer Engine userbuffers): which collective overlaps which GEMM
// per layer and direction, the SMs the communication takes from the GEMM (closed form), and the step it gives.
#include <gtest/gtest.h>

#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/catalog/efficiency_table.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using workload::Op;
using workload::OpKind;
using workload::Program;
using workload::Stream;

const Op* find(const Program& p, const std::string& name, workload::Phase phase) {
  for (const Op& op : p.ops) {
    if (p.name(op) == name && op.phase == phase) return &op;
  }
  return nullptr;
}

// True when `op` waits on the TP stream (for a collective issued before it).
bool waits_on_tp(const Program& p, const Op& op) {
  for (uint32_t i = op.wait_begin; i < op.wait_begin + op.wait_count; ++i) {
    if (p.waits[i].stream == Stream::Tp) return true;
  }
  return false;
}

spec::JobSpec job(bool overlap) {
  return test::job_from_yaml(test::small_gpt_yaml(4, 1, 2, 16, ", sequence_parallel: true",
                                                  overlap ? ", tp_comm_overlap: true" : ""));
}

TEST(TpCommOverlap, WhichCollectiveOverlapsWhichGemm) {
  const workload::Workload off = workload::build_megatron_workload(job(false));
  const workload::Workload on = workload::build_megatron_workload(job(true));
  const Program& a = off.programs[0];
  const Program& b = on.programs[0];
  using workload::Phase;
  // Forward, ring exchange: qkv and fc1 no longer wait for their all-gather; they hold 1 SM.
  for (const char* g : {"qkv_proj", "fc1"}) {
    ASSERT_NE(find(a, g, Phase::Forward), nullptr);
    EXPECT_TRUE(waits_on_tp(a, *find(a, g, Phase::Forward))) << g;
    EXPECT_FALSE(waits_on_tp(b, *find(b, g, Phase::Forward))) << g;
    EXPECT_EQ(find(b, g, Phase::Forward)->comm_sms, 1) << g;
  }
  // Forward, pipelined: attention proj and fc2 hold 16 SMs; only a quarter of their reduce-scatter follows them.
  for (const char* g : {"attention_proj", "fc2"}) EXPECT_EQ(find(b, g, Phase::Forward)->comm_sms, 16) << g;
  const Op* last = find(b, "mlp_reduce_scatter_last_chunk", Phase::Forward);
  const Op* whole = find(a, "mlp_reduce_scatter", Phase::Forward);
  ASSERT_NE(last, nullptr);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(last->bytes * 4, whole->bytes);
  EXPECT_EQ(find(b, "mlp_reduce_scatter", Phase::Forward)->bytes, whole->bytes - whole->bytes / 4);
  // Backward, ring exchange: the dgrad GEMMs of proj and fc2 run beside the gradient all-gather.
  for (const char* g : {"attention_proj_dgrad", "fc2_dgrad"}) {
    EXPECT_TRUE(waits_on_tp(a, *find(a, g, Phase::Backward))) << g;
    EXPECT_FALSE(waits_on_tp(b, *find(b, g, Phase::Backward))) << g;
  }
  // Backward, bulk: qkv/fc1 dgrad beside the input all-gather and wgrad beside the reduce-scatter, 2 SMs each.
  for (const char* g : {"qkv_proj_dgrad", "qkv_proj_wgrad", "fc1_dgrad", "fc1_wgrad"}) {
    EXPECT_EQ(find(b, g, Phase::Backward)->comm_sms, 2) << g;
    EXPECT_EQ(find(a, g, Phase::Backward)->comm_sms, 0) << g;
  }
  // The output layer is Megatron's own ColumnParallelLinear, not a Transformer Engine module: no userbuffers.
  for (const char* g : {"output_layer_dgrad", "output_layer_wgrad"}) {
    ASSERT_NE(find(b, g, Phase::Backward), nullptr) << g;
    EXPECT_EQ(find(b, g, Phase::Backward)->comm_sms, 0) << g;
  }
}

TEST(TpCommOverlap, GemmBesideCommunicationRunsOnTheRemainingSms) {
  // H100 SXM has 132 SMs: a GEMM with 16 held runs 132/116 as long (to the nanosecond rounding).
  const hw::GpuSpec& h100 = stepsim::catalog::shipped().gpus.find("H100-SXM");
  const auto model = cost::make_roofline_model(h100, spec::Precision::Bf16, stepsim::catalog::shipped().efficiency.resolve(h100));
  Op g;
  g.category = workload::ComputeCategory::Gemm;
  g.gemm_m = 8192;
  g.gemm_n = 8192;
  g.gemm_k = 8192;
  g.flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  g.bytes = 2ull * 3 * 8192 * 8192;
  // The eager launch gap before the kernel does not stretch with the SMs.
  const double gap = stepsim::catalog::shipped().efficiency.resolve(h100).launch_gap_us * 1e3;
  const double alone = static_cast<double>(model->duration_ns(g)) - gap;
  g.comm_sms = 16;
  EXPECT_NEAR(static_cast<double>(model->duration_ns(g)) - gap, alone * 132.0 / 116.0, 1.0);
}

TEST(TpCommOverlap, OverlapShortensTheStepAndNeedsSequenceParallelism) {
  const double off = static_cast<double>(sim::run_simulation(stepsim::catalog::shipped(), job(false), {0}).result.step_ns);
  const double on = static_cast<double>(sim::run_simulation(stepsim::catalog::shipped(), job(true), {0}).result.step_ns);
  EXPECT_LT(on, off);
  const std::string err = test::job_error(test::small_gpt_yaml(4, 1, 2, 16, "", ", tp_comm_overlap: true"));
  EXPECT_NE(err.find("training.tp_comm_overlap: needs parallelism.sequence_parallel"), std::string::npos) << err;
}

// Megatron-Core's per-kind switches (--disable-tp-comm-overlap-ag etc.): each one puts back exactly its rows of the
// table in docs/MODEL.md as without the overlap, and leaves the others overlapped.
spec::JobSpec job_with(const std::string& extra) {
  return test::job_from_yaml(test::small_gpt_yaml(4, 1, 2, 16, ", sequence_parallel: true",
                                                  ", tp_comm_overlap: true" + extra));
}

TEST(TpCommOverlap, EachSwitchTurnsOffItsOwnOverlapOnly) {
  using workload::Phase;
  const workload::Workload no_ag = workload::build_megatron_workload(job_with(", tp_comm_overlap_ag: false"));
  const Program& a = no_ag.programs[0];
  for (const char* g : {"qkv_proj", "fc1"}) {  // forward ring exchange off: waits for its all-gather, no SM held
    EXPECT_TRUE(waits_on_tp(a, *find(a, g, Phase::Forward))) << g;
    EXPECT_EQ(find(a, g, Phase::Forward)->comm_sms, 0) << g;
  }
  for (const char* g : {"attention_proj_dgrad", "fc2_dgrad"}) EXPECT_TRUE(waits_on_tp(a, *find(a, g, Phase::Backward))) << g;
  EXPECT_EQ(find(a, "fc2", Phase::Forward)->comm_sms, 16);  // the reduce-scatter overlap stays
  EXPECT_EQ(find(a, "fc1_wgrad", Phase::Backward)->comm_sms, 2);

  const workload::Workload no_rs = workload::build_megatron_workload(job_with(", tp_comm_overlap_rs: false"));
  const Program& r = no_rs.programs[0];
  EXPECT_EQ(find(r, "fc2", Phase::Forward)->comm_sms, 0);
  EXPECT_EQ(find(r, "mlp_reduce_scatter_last_chunk", Phase::Forward), nullptr);
  EXPECT_EQ(find(r, "fc1", Phase::Forward)->comm_sms, 1);

  const workload::Workload no_bulk =
      workload::build_megatron_workload(job_with(", tp_comm_bulk_dgrad: false, tp_comm_bulk_wgrad: false"));
  const Program& k = no_bulk.programs[0];
  for (const char* g : {"qkv_proj_dgrad", "qkv_proj_wgrad", "fc1_dgrad", "fc1_wgrad"})
    EXPECT_EQ(find(k, g, Phase::Backward)->comm_sms, 0) << g;
  EXPECT_EQ(find(k, "fc2", Phase::Forward)->comm_sms, 16);
}

TEST(TpCommOverlap, ReduceScatterPipelinedWithDgradInsteadOfBesideWgrad) {
  using workload::Phase;
  const workload::Workload on = workload::build_megatron_workload(job_with(", tp_comm_overlap_rs_dgrad: true"));
  const workload::Workload base = workload::build_megatron_workload(job_with(""));
  const Program& b = on.programs[0];
  const Program& a = base.programs[0];
  // fc1's dgrad holds the bulk all-gather's 2 SMs and the pipelined reduce-scatter's 16; its wgrad holds none.
  EXPECT_EQ(find(b, "fc1_dgrad", Phase::Backward)->comm_sms, 18);
  EXPECT_EQ(find(b, "fc1_wgrad", Phase::Backward)->comm_sms, 0);
  // Three quarters of the input gradient's reduce-scatter beside the GEMM, the last quarter after it.
  const Op* whole = find(a, "fc1_grad_reduce_scatter", Phase::Backward);
  const Op* last = find(b, "fc1_grad_reduce_scatter_last_chunk", Phase::Backward);
  ASSERT_NE(whole, nullptr);
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->bytes * 4, whole->bytes);
  EXPECT_EQ(find(b, "fc1_grad_reduce_scatter", Phase::Backward)->bytes, whole->bytes - whole->bytes / 4);
}

TEST(TpCommOverlap, SwitchesNeedTheOverlap) {
  const std::string err =
      test::job_error(test::small_gpt_yaml(4, 1, 2, 16, ", sequence_parallel: true", ", tp_comm_overlap_ag: false"));
  EXPECT_NE(err.find("training.tp_comm_overlap_ag: applies with training.tp_comm_overlap: true only"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace stepsim
