// Gradient-accumulation fusion (training.gradient_accumulation_fusion, Megatron's --no-gradient-accumulation-fusion):
// without it each weight-gradient GEMM writes its gradient in the activation dtype and one more kernel adds it into
// the fp32 main_grad. Bytes checked by hand on fc1 of the small GPT job (h 1024, ffn 4096, GELU, TP 1, bf16, fp32
// main grads: beta 2, gamma 4).
#include <gtest/gtest.h>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

const workload::Op* backward_op(const workload::Program& p, const std::string& name) {
  for (const workload::Op& op : p.ops) {
    if (p.name(op) == name && op.phase == workload::Phase::Backward) return &op;
  }
  return nullptr;
}

spec::JobSpec fusion_job(bool fused) {
  return test::job_from_yaml(
      test::small_gpt_yaml(1, 1, 2, 8, "", fused ? "" : ", gradient_accumulation_fusion: false"));
}

TEST(GradAccumFusion, UnfusedWgradWritesBf16AndAddsIntoMainGrad) {
  const workload::Workload fused = workload::build_megatron_workload(fusion_job(true));
  const workload::Workload unfused = workload::build_megatron_workload(fusion_job(false));
  const workload::Program& a = fused.programs[0];
  const workload::Program& b = unfused.programs[0];
  const uint64_t kn = 1024ull * 4096ull;  // fc1's weight: h x ffn
  ASSERT_NE(backward_op(a, "fc1_wgrad"), nullptr);
  ASSERT_NE(backward_op(b, "fc1_wgrad"), nullptr);
  // Fused: the GEMM reads and writes main_grad (2 x 4 B per weight); unfused: it writes 2 B per weight.
  EXPECT_EQ(backward_op(a, "fc1_wgrad")->bytes - backward_op(b, "fc1_wgrad")->bytes, 6 * kn);
  EXPECT_EQ(backward_op(a, "fc1_wgrad_main_grad_add"), nullptr);
  const workload::Op* add = backward_op(b, "fc1_wgrad_main_grad_add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->bytes, (2 + 2 * 4) * kn);  // read the bf16 gradient, read and write the fp32 main_grad
  EXPECT_EQ(add->category, workload::ComputeCategory::Elementwise);
  // Every weight-gradient GEMM gets its add.
  size_t wgrads = 0, adds = 0;
  for (const workload::Op& op : b.ops) {
    const std::string n = b.name(op);
    if (op.phase != workload::Phase::Backward) continue;
    if (n.size() > 6 && n.compare(n.size() - 6, 6, "_wgrad") == 0) ++wgrads;
    if (n.find("_main_grad_add") != std::string::npos) ++adds;
  }
  EXPECT_GT(wgrads, 0u);
  EXPECT_EQ(adds, wgrads);
  // The extra traffic makes the step longer.
  EXPECT_GT(sim::run_simulation(stepsim::catalog::shipped(), fusion_job(false), {0}).result.step_ns, sim::run_simulation(stepsim::catalog::shipped(), fusion_job(true), {0}).result.step_ns);
}

}  // namespace
}  // namespace stepsim
