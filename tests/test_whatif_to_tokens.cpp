// What-ifs users ask (issue 46 item 5): another GPU with its own NVLink (`whatif --to cluster.gpu=B200`), and a token
// budget instead of a step count (`--tokens` on whatif, reliability and plan), each side's steps from its own batch.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "stepsim/api/plan.hpp"
#include "stepsim/api/reliability.hpp"
#include "stepsim/api/simulate.hpp"
#include "stepsim/api/whatif.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/plan/plan_space.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

// Llama-2-7B-like on 8 H100 with the NVLink rate written out (as a cluster file copied from an H100 job has it).
std::string h100_job(const std::string& gpu, bool with_intra) {
  return "model: {name: l7, num_layers: 4, hidden_size: 4096, num_attention_heads: 32, ffn_hidden_size: 11008,"
         " activation: swiglu, normalization: rmsnorm, add_bias_linear: false, vocab_size: 32000, seq_length: 4096}\n"
         "parallelism: {tensor: 2, data: 4}\n"
         "training: {micro_batch_size: 1, global_batch_size: 32, distributed_optimizer: true}\n"
         "cluster: {gpu: " + gpu + ", num_gpus: 8, gpus_per_node: 8" +
         (with_intra ? ", intra_node: {bandwidth_GBps: 450}" : "") + "}\n";
}

double simulated_step(const std::string& yaml) {
  api::SimulateOptions o;
  o.job.job_text = yaml;
  return api::simulate(o).summary.step_time_s;
}

TEST(WhatIfTo, AnotherGpuBringsItsOwnNvlink) {
  api::WhatIfOptions o;
  o.job.job_text = h100_job("H100-SXM", true);
  o.to = {"cluster.gpu=B200"};
  const api::WhatIfOutput r = api::whatif(o);
  EXPECT_EQ(r.after_gpu, "B200");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("cluster.intra_node.bandwidth_GBps (450 GB/s, the old GPU's NVLink) is dropped"),
            std::string::npos) << r.notes[0];
  // The after side is the job written for a B200 from the start (its NVLink 5 at 900 GB/s), not an H100's 450.
  EXPECT_EQ(r.after.step_time_s, simulated_step(h100_job("B200", false)));
  EXPECT_NE(r.after.step_time_s, simulated_step(h100_job("B200", true)));
  EXPECT_EQ(r.before.step_time_s, simulated_step(h100_job("H100-SXM", true)));
  EXPECT_EQ(r.json["after"]["gpu"], "B200");
  // A --to of the NVLink rate keeps it.
  o.to = {"cluster.gpu=B200", "cluster.intra_node.bandwidth_GBps=450"};
  const api::WhatIfOutput kept = api::whatif(o);
  EXPECT_TRUE(kept.notes.empty());
  EXPECT_EQ(kept.after.step_time_s, simulated_step(h100_job("B200", true)));
  const std::string text = api::whatif_text(o, kept);
  EXPECT_NE(text.find("  --to cluster.gpu=B200\n"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU"), std::string::npos) << text;
}

// Another framework on the after side: the job's training keys that framework has no option for are dropped and
// named (as `plan --framework` drops them), so a torchtitan job can be asked "what would Megatron-Core take".
TEST(WhatIfTo, AnotherFrameworkDropsTheKeysItHasNoOptionFor) {
  std::string job = h100_job("H100-SXM", false);
  job.replace(job.find("distributed_optimizer: true"), 27,
              "zero_stage: 3, framework: torchtitan, compile: true, compile_loss: false, fsdp_units: root");
  api::WhatIfOptions o;
  o.job.job_text = job;
  o.to = {"training.framework=megatron"};
  const api::WhatIfOutput r = api::whatif(o);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "--to training.framework=megatron: the job's training keys megatron has no option for are "
                        "dropped (compile, compile_loss, fsdp_units)");
  std::string megatron = job;
  megatron.replace(megatron.find("framework: torchtitan, compile: true, compile_loss: false, fsdp_units: root"), 75,
                   "framework: megatron");
  EXPECT_EQ(r.after.step_time_s, simulated_step(megatron));
  // A key the user also sets stays, and the job refuses it by name.
  o.to = {"training.framework=megatron", "training.compile=true"};
  try {
    api::whatif(o);
    ADD_FAILURE() << "a --to compile under megatron was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training.compile"), std::string::npos) << e.what();
  }
}

// Each side's links are shown, and what the after side's simulation notes beyond the before side's: a GB200 on 8-GPU
// nodes runs its traffic between them over the NICs until cluster.nvlink_domain says the 72-GPU domain.
TEST(WhatIfTo, EachSideShowsItsLinksAndTheAfterSidesNotes) {
  api::WhatIfOptions o;
  std::string two_nodes = h100_job("H100-SXM", true);  // 16 GPUs: two nodes of 8
  two_nodes.replace(two_nodes.find("num_gpus: 8"), 11, "num_gpus: 16");
  two_nodes.replace(two_nodes.find("data: 4"), 7, "data: 8");
  o.job.job_text = two_nodes;
  o.to = {"cluster.gpu=GB200"};
  const api::WhatIfOutput r = api::whatif(o);
  EXPECT_EQ(r.before.intra_node_GBps, 450);
  EXPECT_EQ(r.after.intra_node_GBps, 900);  // GB200's NVLink 5 (data/gpus.yaml intra_node_GBps)
  EXPECT_EQ(r.json["after"]["intra_node_GBps"], 900);
  const std::string text = api::whatif_text(o, r);
  EXPECT_NE(text.find("NVLink per GPU                   450 GB/s           900 GB/s   +100.0 %"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  network: 400 Gb/s per GPU (one NIC per GPU) over ib\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  after: note: GB200 with cluster.gpus_per_node 8: traffic between these nodes goes over the "
                      "NICs. Its NVLink domain spans 72 GPUs"),
            std::string::npos)
      << text;
  bool noted = false;
  for (const auto& n : r.json["after"]["notes"]) noted = noted || n.get<std::string>().find("NVL72") != std::string::npos;
  EXPECT_TRUE(noted) << r.json["after"]["notes"].dump();
}

// --replan: the after side's layout is plan #1 of `stepsim plan` for the after job, and its step is that plan's as the
// engine times it.
TEST(WhatIfTo, ReplanRunsTheBestPlanForTheAfterSide) {
  api::WhatIfOptions o;
  o.job.job_text = h100_job("H100-SXM", true);
  o.to = {"cluster.gpu=B200"};
  o.replan = true;
  const api::WhatIfOutput r = api::whatif(o);
  api::PlanOptions p;
  p.job.job_text = h100_job("B200", false);
  p.top = 1;
  p.simulate = 1;
  const api::PlanOutput best = api::plan(p);
  ASSERT_FALSE(best.result.plans.empty());
  EXPECT_EQ(r.replanned, plan::describe(best.result.plans.front().plan));
  if (best.result.plans.front().simulated) {
    EXPECT_DOUBLE_EQ(r.after.step_time_s, best.result.plans.front().step_time_s);
  }
  EXPECT_EQ(r.json["after"]["replanned"], r.replanned);
  EXPECT_NE(api::whatif_text(o, r).find("note: --replan: the after side runs plan #1"), std::string::npos);
  // Durations read in human units: under 2 h in minutes or hours, not thousands of seconds.
  const std::string text = api::whatif_text(o, r);
  EXPECT_EQ(text.find("00.0 s"), std::string::npos) << text;
}

TEST(WhatIfTo, BadToIsRefusedByName) {
  api::WhatIfOptions o;
  o.job.job_text = h100_job("H100-SXM", false);
  o.to = {"cluster.gpu"};
  EXPECT_THROW(api::whatif(o), InputError);
  o.to = {"training.global_batch_size=64"};
  o.scales = {"global_batch_size=2"};
  try {
    api::whatif(o);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training.global_batch_size is also scaled (--scale global_batch_size)"),
              std::string::npos) << e.what();
  }
  o.scales.clear();
  o.to = {"cluster.gpu=Z9000"};
  try {
    api::whatif(o);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("Z9000"), std::string::npos) << e.what();
  }
}

// 1e9 tokens at 32 x 4096 = 131,072 tokens a step: 7,629.39 -> 7,630 steps; at a doubled batch 3,814.7 -> 3,815.
TEST(Tokens, EachSideRunsItsOwnSteps) {
  api::WhatIfOptions o;
  o.job.job_text = h100_job("H100-SXM", false);
  o.scales = {"global_batch_size=2"};
  o.tokens = 1e9;
  const api::WhatIfOutput r = api::whatif(o);
  EXPECT_EQ(r.before_steps, 7630);
  EXPECT_EQ(r.after_steps, 3815);
  EXPECT_EQ(r.json["before"]["steps"], 7630);
  EXPECT_EQ(r.json["tokens"], 1e9);
  EXPECT_NE(api::whatif_text(o, r).find("steps (tokens)"), std::string::npos);

  api::ReliabilityOptions ro;
  ro.job.job_text = h100_job("H100-SXM", false);
  ro.tokens = 1e9;
  const api::ReliabilityOutput rel = api::reliability(ro);
  EXPECT_EQ(rel.r.in.steps, 7630);
  EXPECT_EQ(rel.json["inputs"]["tokens_per_step"], 131072.0);
  EXPECT_NE(api::reliability_text(rel).find("tokens            1e+09 = 7630 steps of 131072 tokens"),
            std::string::npos) << api::reliability_text(rel);
  ro.steps = 10;
  EXPECT_THROW(api::reliability(ro), InputError);  // not both
  api::ReliabilityOptions no_job;
  no_job.tokens = 1e9;
  no_job.step_time_s = 1;
  no_job.nodes = 1;
  no_job.save_time_s = 1;
  EXPECT_THROW(api::reliability(no_job), InputError);  // no batch to divide by

  api::PlanOptions po;
  po.job.job_text = h100_job("H100-SXM", false);
  po.objective = "e2e";
  po.tokens = 1e9;
  po.simulate = 0;
  po.top = 1;
  const api::PlanOutput p = api::plan(po);
  EXPECT_EQ(p.json["steps"], 7630);
  // A token budget with the step objective asks for the run's time: the same steps and ranking, and a note of each.
  po.objective = "step";
  const api::PlanOutput implied = api::plan(po);
  EXPECT_EQ(implied.json["steps"], 7630);
  EXPECT_EQ(implied.json["objective"], p.json["objective"]);
  const auto& notes = implied.json["notes"];
  ASSERT_GE(notes.size(), 2u);
  EXPECT_EQ(notes[0].get<std::string>().rfind("--tokens: ranked by the run's end-to-end time", 0), 0u) << notes.dump();
  EXPECT_EQ(notes[1], "tokens 1e+09 = 7630 steps of 131072 tokens (global batch x sequence; the last step rounded up)");
  po.tokens.reset();
  po.steps = 0;
  EXPECT_THROW(api::plan(po), InputError);
}

}  // namespace
}  // namespace stepsim
