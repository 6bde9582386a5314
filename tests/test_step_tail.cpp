// The end of a step as Megatron's finalize_model_grads and optimizer.step run it (issue 13 item 2): the tied
// word-embedding gradient all-reduce between the first and last stage, and the gradient-norm (and fp16 found-inf)
// all-reduces the optimizer waits for. Bytes are hand-counted; the exchange's time is the alpha-beta closed form.
#include <gtest/gtest.h>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

// 8 layers of h 1024 on 4 stages x TP 2, each stage on its own 2-GPU node (stages meet over 1 Gb/s links), V 32000.
std::string tail_job(bool tied, const std::string& precision) {
  return std::string("model: {name: g, num_layers: 8, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
                     " vocab_size: 32000, seq_length: 1024, tie_embeddings: ") +
         (tied ? "true" : "false") + "}\n" +
         "parallelism: {tensor: 2, pipeline: 4, data: 1}\n"
         "training: {micro_batch_size: 1, global_batch_size: 4, precision: " + precision + "}\n"
         "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 2, intra_node: {bandwidth_GBps: 450},"
         " inter_node: {bandwidth_Gbps: 1, latency_us: 5}}\n";
}

int count(const workload::Program& p, const std::string& name, uint64_t* bytes = nullptr) {
  int n = 0;
  for (const auto& op : p.ops) {
    if (p.name(op) != name) continue;
    ++n;
    if (bytes) *bytes = op.bytes;
  }
  return n;
}

TEST(StepTail, TiedEmbeddingGradientsExchangedBetweenFirstAndLastStage) {
  const spec::JobSpec job = test::job_from_yaml(tail_job(true, "bf16"));
  const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), job, {0});
  const workload::Workload& w = s.workload;
  // Embedding gradient on each end: padded vocabulary 32000 (a multiple of 128 x 2) x 1024 / TP 2, fp32 main_grad.
  const uint64_t S = 32000ull * 1024 / 2 * 4;
  uint64_t first = 0, last = 0;
  EXPECT_EQ(count(w.programs[w.role_of_stage[0]], "tied_embedding_grad_all_reduce", &first), 1);
  EXPECT_EQ(count(w.programs[w.role_of_stage[3]], "tied_embedding_grad_all_reduce", &last), 1);
  EXPECT_EQ(first, S);
  EXPECT_EQ(last, S);
  EXPECT_EQ(count(w.programs[w.role_of_stage[1]], "tied_embedding_grad_all_reduce"), 0);
  // Untied: nothing to exchange.
  const workload::Workload u = workload::build_megatron_workload(test::job_from_yaml(tail_job(false, "bf16")));
  EXPECT_EQ(count(u.programs[u.role_of_stage[0]], "tied_embedding_grad_all_reduce"), 0);
  // Rank 0 (stage 0) and its partner on stage 3 are on different nodes: 5 us + S / (1e9/8 B/s) = 524.293 ms, and
  // rank 0's optimizer waits for it.
  const workload::Program& p = w.programs[w.role_of_stage[0]];
  int64_t end = -1, opt_begin = -1;
  for (const sim::OpRecord& r : s.result.recorded.at(0).ops) {
    const std::string& n = p.name(p.ops[r.op]);
    if (n == "tied_embedding_grad_all_reduce") {
      EXPECT_EQ(r.end_ns - r.begin_ns, 5000 + int64_t(S) * 8);
      end = r.end_ns;
    }
    if (n == "optimizer_step") opt_begin = r.begin_ns;
  }
  ASSERT_GT(end, 0);
  EXPECT_GE(opt_begin, end);
}

TEST(StepTail, GradientNormAndFoundInfAllReducesBeforeTheOptimizer) {
  for (const std::string prec : {"bf16", "fp16"}) {
    const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(tail_job(false, prec)));
    const workload::Program& p = w.programs[w.role_of_stage[1]];
    int norm_tp = 0, norm_pp = 0, inf = 0;
    for (const auto& op : p.ops) {
      const std::string& n = p.name(op);
      if (n == "grad_norm_all_reduce") {
        EXPECT_EQ(op.bytes, 4u);  // one fp32
        norm_tp += op.group == workload::GroupKind::Tp;
        norm_pp += op.group == workload::GroupKind::Pp;
      }
      inf += n == "found_inf_all_reduce";
    }
    EXPECT_EQ(norm_tp, 1) << prec;
    EXPECT_EQ(norm_pp, 1) << prec;
    EXPECT_EQ(inf, prec == "fp16" ? 2 : 0) << prec;  // fp16 loss scaling: the found-inf flag, over TP and PP
  }
}

}  // namespace
}  // namespace stepsim
