// What `simulate` explains beyond the step (issue 46 item 6): each pipeline stage's time and the bottleneck of an
// uneven pipeline, and notes for inputs that are valid but unlikely to be meant (a NIC faster than any sold, a link
// above the GPU's own, TP across nodes, a step at low MFU dominated by one thing).
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "stepsim/api/comm.hpp"
#include "stepsim/api/simulate.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace explain_notes_test {

api::SimulateOutput simulate_yaml(const std::string& yaml) {
  api::SimulateOptions o;
  o.job.job_text = yaml;
  return api::simulate(o);
}

bool has_note(const report::Summary& s, const std::string& text) {
  return std::any_of(s.notes.begin(), s.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

TEST(ExplainNotes, AnUnevenPipelineNamesItsBottleneckStage) {
  // 8 layers as 1 + 1 + 1 + 5 (pipeline_layers): the last stage holds five layers and the head; the others idle.
  const std::string yaml = test::small_gpt_yaml(1, 4, 1, 16, ", pipeline_layers: [1, 1, 1, 5]");
  const api::SimulateOutput out = simulate_yaml(yaml);
  const report::Summary& s = out.summary;
  ASSERT_EQ(s.stage_times.size(), 4u);
  EXPECT_EQ(s.bottleneck_stage, 3);
  EXPECT_EQ(s.stage_times[3].layers, 5);
  EXPECT_EQ(s.stage_times[0].layers, 1);
  for (const auto& t : s.stage_times) {
    EXPECT_NEAR(t.busy_s, s.step_time_s - t.breakdown.pipeline_bubble_s, 1e-12);
    EXPECT_LE(t.busy_s, s.stage_times[3].busy_s);
  }
  // Rank 0's breakdown is the first stage's.
  EXPECT_DOUBLE_EQ(s.stage_times[0].breakdown.compute_s, s.breakdown.compute_s);
  EXPECT_EQ(out.json["bottleneck_stage"], 3);
  EXPECT_EQ(out.json["pipeline_stages"].size(), 4u);
  const std::string text = report::to_text(s, out.sim.workload.job);
  EXPECT_NE(text.find("bottleneck stage 3: compute"), std::string::npos) << text;
  // No pipeline, no per-stage times.
  const api::SimulateOutput flat = simulate_yaml(test::small_gpt_yaml(1, 1, 4, 16));
  EXPECT_TRUE(flat.summary.stage_times.empty());
  EXPECT_FALSE(flat.json.contains("bottleneck_stage"));
}

TEST(ExplainNotes, ImplausibleLinksAndTpAcrossNodesAreNamed) {
  std::string yaml = test::small_gpt_yaml(1, 1, 16, 16);
  const api::SimulateOutput plain = simulate_yaml(yaml);
  EXPECT_FALSE(has_note(plain.summary, "fastest NIC"));
  EXPECT_FALSE(has_note(plain.summary, "spans"));
  // 400 GB/s per GPU written as Gb/s x 8 = 3,200 Gb/s; 900 GB/s intra-node on an H100 (450 per direction).
  yaml.replace(yaml.find("bandwidth_Gbps: 400"), 19, "bandwidth_Gbps: 3200");
  yaml.replace(yaml.find("bandwidth_GBps: 450"), 19, "bandwidth_GBps: 900");
  const api::SimulateOutput odd = simulate_yaml(yaml);
  EXPECT_TRUE(has_note(odd.summary, "bandwidth_Gbps 3200 is per GPU, above the fastest NIC"));
  EXPECT_TRUE(has_note(odd.summary, "bandwidth_GBps 900 is above the H100-SXM's own link (450 GB/s"));
  const api::SimulateOutput tp = simulate_yaml(test::small_gpt_yaml(16, 1, 1, 16));
  EXPECT_TRUE(has_note(tp.summary, "TP 16 spans 2 nodes of 8 GPUs"));
  // The same from a network section: eight 400 Gb/s NICs for each GPU of 1-GPU nodes (a file's 8 NICs read with
  // gpus_per_node 1), in `simulate` and in `comm`.
  std::string nics = test::small_gpt_yaml(1, 1, 16, 16);
  nics.replace(nics.find("gpus_per_node: 8"), 16, "gpus_per_node: 1, network: {nics_per_node: 8, nic_Gbps: 400}");
  EXPECT_TRUE(has_note(simulate_yaml(nics).summary, "8 NICs of 400 Gb/s for 1 GPU give each GPU 3200 Gb/s"));
  api::CommOptions o;
  o.gpus = 16;
  o.gpus_per_node = 1;
  o.sizes = "1M";
  o.store = "none";
  o.overrides = {"cluster.network.nics_per_node=8", "cluster.network.nic_Gbps=400"};
  const api::CommOutput comm = api::comm(o);
  EXPECT_TRUE(std::any_of(comm.notes.begin(), comm.notes.end(),
                          [](const std::string& n) { return n.find("give each GPU 3200 Gb/s") != n.npos; }));
}

TEST(ExplainNotes, ALowMfuStepSaysWhatDominatesIt) {
  // ZeRO-3 over 64 GPUs on a 25 Gb/s network with 16 micro-batches: the gathers dominate.
  std::string yaml = test::small_gpt_yaml(1, 1, 64, 1024, "", ", zero_stage: 3");
  yaml.replace(yaml.find("bandwidth_Gbps: 400"), 19, "bandwidth_Gbps: 25");
  const api::SimulateOutput out = simulate_yaml(yaml);
  ASSERT_LT(out.summary.mfu, 0.15);
  EXPECT_TRUE(has_note(out.summary, "exposed dp communication takes")) << out.summary.mfu;
  EXPECT_TRUE(has_note(out.summary, "for each of the 16 micro-batches"));
  EXPECT_FALSE(has_note(simulate_yaml(test::small_gpt_yaml(1, 1, 8, 16)).summary, "MFU "));
}

TEST(ExplainNotes, AHostBoundStepNamesTheRemedy) {
  // The small GPT with the host issue model on: eager launches outlast its kernels (test_util.hpp says so).
  std::string yaml = test::small_gpt_yaml(1, 1, 8, 8);
  yaml.replace(yaml.find("host_time_scale: 0"), 18, "host_time_scale: 1");
  const api::SimulateOutput eager = simulate_yaml(yaml);
  ASSERT_TRUE(has_note(eager.summary, "host gaps (CPU-bound) takes")) << eager.summary.mfu;
  EXPECT_TRUE(has_note(eager.summary, "CUDA graphs, training.cuda_graphs or Megatron's --enable-cuda-graph"));
}

}  // namespace explain_notes_test
}  // namespace stepsim
