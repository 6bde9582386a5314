// The planner's reduced MoE probe (issue 46 item 4): the dense layers and three periods of the MoE pattern are built,
// the middle period copied. Against the probe of every layer, the copied layers' costs, the stored activations, the working
// memory and the forward FLOPs must be what the whole model gives.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/plan/plan_estimate.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

// A small DeepSeek-like model: 2 dense layers, then MoE every second layer (dense between), host issue modelled.
spec::JobSpec moe_job(const std::string& extra_moe, int layers = 12) {
  spec::JobSpec j = test::job_from_yaml(
      "model: {name: m, num_layers: " + std::to_string(layers) + ", hidden_size: 2048, num_attention_heads: 16, num_query_groups: 4,"
      " ffn_hidden_size: 5632, activation: swiglu, normalization: rmsnorm, add_bias_linear: false, vocab_size: 32000,"
      " seq_length: 2048, moe: {num_experts: 16, topk: 4, ffn_hidden_size: 1024, first_k_dense: 2" + extra_moe +
      "}}\n"
      "parallelism: {expert: 4, data: 8}\n"
      "training: {micro_batch_size: 1, global_batch_size: 32}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\nsimulation: {calibration_store: none}\n");
  spec::validate(catalog::shipped().gpus, j);
  return j;
}

void expect_near_rel(double got, double want, double tol, const std::string& what) {
  EXPECT_NEAR(got, want, tol * std::max(std::fabs(want), 1e-12)) << what;
}

void expect_same_costs(const spec::JobSpec& job, const plan::ProbeKey& key) {
  const auto compute = sim::make_compute_model(catalog::shipped(), job);
  const auto comm = sim::make_collective_model(catalog::shipped(), job);
  const plan::LayerCosts whole = plan::probe_layer_costs(catalog::shipped(), job, key, *compute, *comm, false);
  const plan::LayerCosts reduced = plan::probe_layer_costs(catalog::shipped(), job, key, *compute, *comm, true);
  ASSERT_EQ(reduced.fwd.size(), whole.fwd.size());
  for (size_t l = 0; l < whole.fwd.size(); ++l) {
    const double tol = 1e-9;
    const std::string at = "layer " + std::to_string(l);
    expect_near_rel(reduced.fwd[l].total(), whole.fwd[l].total(), tol, at + " forward");
    expect_near_rel(reduced.bwd[l].total(), whole.bwd[l].total(), tol, at + " backward");
    if (!whole.paired_ep_s.empty()) {
      expect_near_rel(reduced.paired_ep_s[l], whole.paired_ep_s[l], tol, at + " pair EP");
      expect_near_rel(reduced.paired_tp_s[l], whole.paired_tp_s[l], tol, at + " pair TP");
      expect_near_rel(reduced.paired_host_s[l], whole.paired_host_s[l], tol, at + " pair host");
    }
    expect_near_rel(reduced.fwd[l].issue_s, whole.fwd[l].issue_s, 1e-9, at + " forward issue");
    EXPECT_EQ(reduced.stored_bytes[l], whole.stored_bytes[l]) << at;
  }
  expect_near_rel(reduced.forward_flops, whole.forward_flops, 1e-12, "forward FLOPs");
  expect_near_rel(reduced.transient_bytes, whole.transient_bytes, 1e-9, "working memory");
  expect_near_rel(reduced.last_fwd.total(), whole.last_fwd.total(), 1e-9, "head forward");
  EXPECT_EQ(reduced.host_syncs, whole.host_syncs);
}

TEST(ProbeReduction, CopiedLayersCostWhatTheWholeModelGives) {
  plan::ProbeKey key;
  key.expert = 4;
  expect_same_costs(moe_job(", layer_freq: 2"), key);
  key.micro_batch_size = 2;
  key.recompute = spec::Recompute::Full;
  expect_same_costs(moe_job(""), key);
}

// Under the combined 1F1B EP overlap a layer's pair costs depend on the layer its forward runs beside (L - 1 - l): the
// probe keeps both ends mirrored and one period between (probe.cpp). Models long enough to be reduced: 30 layers with
// MoE every second one (14 built), 24 with every layer MoE after two dense ones (9 built), with micro-batches whose
// host falls behind and ones whose GPU does.
TEST(ProbeReduction, CombinedEpOverlapPairsCostWhatTheWholeModelGives) {
  plan::ProbeKey key;
  key.expert = 4;
  key.ep_overlap = true;
  for (int mbs : {1, 4}) {
    key.micro_batch_size = mbs;
    expect_same_costs(moe_job(", layer_freq: 2", 30), key);
    expect_same_costs(moe_job("", 24), key);
  }
  key.tensor = 2;
  key.micro_batch_size = 1;
  expect_same_costs(moe_job(", layer_freq: 2", 32), key);
}

}  // namespace
}  // namespace stepsim
