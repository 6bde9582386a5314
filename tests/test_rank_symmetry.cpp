// Rank symmetry (issue 17 item 2; src/stepsim/sim/rank_symmetry.hpp): simulating one representative per class of
// symmetric ranks gives bit-identical results to simulating every rank (the summary JSON, every rank's finish time
// and peak memory, the recorded timelines, memory series and flows), on the shipped examples and on randomised jobs;
// whatever breaks the symmetry makes every rank simulated.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/input/job_loader.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

sim::Simulation run(spec::JobSpec job, bool all_ranks, const std::vector<int>& record) {
  job.simulation.all_ranks = all_ranks;
  return sim::run_simulation(stepsim::catalog::shipped(), job, record);
}

// Every result of the two runs but the engine's own statistics (events, wall time, ranks run).
void expect_same(const sim::Simulation& a, const sim::Simulation& b, const std::string& what) {
  EXPECT_EQ(a.result.step_ns, b.result.step_ns) << what;
  EXPECT_EQ(a.result.finish_ns, b.result.finish_ns) << what;
  EXPECT_EQ(a.result.peak_bytes, b.result.peak_bytes) << what;
  ASSERT_EQ(a.result.recorded.size(), b.result.recorded.size()) << what;
  for (size_t i = 0; i < a.result.recorded.size(); ++i) {
    const sim::RankTimeline &x = a.result.recorded[i], &y = b.result.recorded[i];
    EXPECT_EQ(x.rank, y.rank) << what;
    ASSERT_EQ(x.ops.size(), y.ops.size()) << what << " rank " << x.rank;
    for (size_t k = 0; k < x.ops.size(); ++k) {
      const sim::OpRecord &p = x.ops[k], &q = y.ops[k];
      ASSERT_TRUE(p.op == q.op && p.post_ns == q.post_ns && p.begin_ns == q.begin_ns && p.end_ns == q.end_ns &&
                  p.slowdown == q.slowdown && p.overlap_ns == q.overlap_ns)
          << what << " rank " << x.rank << " op " << k;
    }
    ASSERT_EQ(x.memory.size(), y.memory.size()) << what;
    for (size_t k = 0; k < x.memory.size(); ++k)
      EXPECT_TRUE(x.memory[k].t_ns == y.memory[k].t_ns && x.memory[k].bytes == y.memory[k].bytes) << what;
  }
  ASSERT_EQ(a.result.flows.size(), b.result.flows.size()) << what;
  for (size_t k = 0; k < a.result.flows.size(); ++k) {
    const sim::Flow &p = a.result.flows[k], &q = b.result.flows[k];
    EXPECT_TRUE(p.src_rank == q.src_rank && p.dst_rank == q.dst_rank && p.begin_ns == q.begin_ns &&
                p.end_ns == q.end_ns && p.bytes == q.bytes)
        << what;
  }
  auto json = [](const sim::Simulation& s) {
    nlohmann::json j = report::to_json(report::summarize(s, 0), s.workload.job);
    j.erase("simulation");
    return j.dump();
  };
  EXPECT_EQ(json(a), json(b)) << what;
}

// One rank per pipeline stage (tp = cp = dp = 0), as `simulate --trace` records by default.
std::vector<int> stage_heads(const spec::JobSpec& job) {
  std::vector<int> r;
  const int stride = job.cluster.num_gpus / job.parallelism.pipeline;
  for (int s = 0; s < job.parallelism.pipeline; ++s) r.push_back(s * stride);
  return r;
}

TEST(RankSymmetry, ExamplesMatchEveryRankSimulated) {
  struct Case {
    const char* file;
    int simulated;  // representatives: tp x pp (x more where the symmetry breaks)
  };
  for (const Case& c : {Case{"llama2-7b-8", 1}, Case{"mixtral-8x7b-ep8", 4}, Case{"llama2-70b-1024", 32},
                        Case{"gpt3-175b-h800", 96}}) {
    const spec::JobSpec job = spec::load_job_file(stepsim::catalog::shipped().gpus, test::source_dir() + "/examples/" + c.file + ".yaml");
    const sim::Simulation all = run(job, true, stage_heads(job));
    const sim::Simulation sym = run(job, false, stage_heads(job));
    EXPECT_EQ(all.result.mirrored_ranks, 0) << c.file;
    EXPECT_EQ(sym.result.simulated_ranks, c.simulated) << c.file;
    EXPECT_EQ(sym.result.simulated_ranks + sym.result.mirrored_ranks, job.cluster.num_gpus) << c.file;
    expect_same(all, sym, c.file);
  }
}

// Random small jobs over the features that shape the programs and groups: TP / CP / DP / PP, interleaving, MoE with
// expert parallelism (folded or not), ZeRO stages, overlapped DP communication, TP overlap, recompute, the overlap
// models, nodes of 4 or 8 GPUs. Seeded: the same 40 jobs every run.
TEST(RankSymmetry, RandomJobsMatchEveryRankSimulated) {
  std::mt19937 rng(20261126);
  auto pick = [&](std::initializer_list<int> v) { return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)); };
  int mirrored_jobs = 0;
  for (int i = 0; i < 40; ++i) {
    const int t = pick({1, 2, 4}), c = pick({1, 1, 2}), d = pick({1, 2, 4}), p = pick({1, 2, 4});
    const int gpn = pick({4, 8});
    const bool moe = pick({0, 1}) == 1;
    const int e = moe ? pick({1, 2, 4}) : 1;
    if ((c * d) % e != 0) continue;
    const int m = p * pick({1, 2, 4});
    std::ostringstream y;
    y << "model: {name: r, num_layers: 8, hidden_size: 512, num_attention_heads: 8, ffn_hidden_size: 2048,"
      << " vocab_size: 32000, seq_length: 1024" << (moe ? ", moe: {num_experts: 8, topk: 2, ffn_hidden_size: 1024}" : "")
      << "}\nparallelism: {tensor: " << t << ", context: " << c << ", data: " << d << ", pipeline: " << p
      << ", expert: " << e << ", sequence_parallel: " << (t > 1 ? "true" : "false");
    if (p > 1 && pick({0, 1})) y << ", virtual_stages: 2, schedule: interleaved-1f1b";
    y << "}\ntraining: {micro_batch_size: 1, global_batch_size: " << m * d
      << ", distributed_optimizer: " << (pick({0, 1}) ? "true" : "false")
      << ", overlap_grad_reduce: " << (pick({0, 1}) ? "true" : "false") << ", recompute: " << (pick({0, 1}) ? "selective" : "none");
    if (t > 1 && pick({0, 1})) y << ", tp_comm_overlap: true";
    y << "}\ncluster: {gpu: H100-SXM, num_gpus: " << t * c * d * p << ", gpus_per_node: " << gpn
      << ", intra_node: {bandwidth_GBps: 450, latency_us: 1}, inter_node: {bandwidth_Gbps: 400, latency_us: 5}}\n";
    const int overlap = pick({0, 0, 1, 2});
    if (overlap) y << "simulation: {overlap_model: " << (overlap == 1 ? "coefficients" : "sm_share") << "}\n";
    spec::JobSpec job;
    try {
      job = test::job_from_yaml(y.str());
    } catch (const InputError&) {
      continue;  // a combination the job rules refuse (tp_comm_overlap without SP, ...)
    }
    const sim::Simulation all = run(job, true, stage_heads(job));
    const sim::Simulation sym = run(job, false, stage_heads(job));
    mirrored_jobs += sym.result.mirrored_ranks > 0;
    expect_same(all, sym, y.str());
  }
  EXPECT_GE(mirrored_jobs, 10);  // the comparison covered mirrored runs, not only fallbacks
}

TEST(RankSymmetry, WhatBreaksTheSymmetrySimulatesEveryRank) {
  const std::string base = test::small_gpt_yaml(2, 2, 4, 16);
  auto mirrored = [&](const std::string& yaml, const std::vector<int>& record) {
    return run(test::job_from_yaml(yaml), false, record).result.mirrored_ranks;
  };
  EXPECT_EQ(mirrored(base, {0}), 12);                                     // 2 x 2 representatives of 16 ranks
  EXPECT_EQ(mirrored(base, {0, 5}), 0);                                   // a recorded rank that is mirrored
  EXPECT_EQ(mirrored(test::small_gpt_yaml(2, 2, 4, 16, "", "", ", comm_model: flow"), {0}), 0);  // links shared
  std::string slow = base;
  slow.replace(slow.find("gpus_per_node: 8"), 16, "gpus_per_node: 8, slow_ranks: {5: 1.3}");
  EXPECT_EQ(mirrored(slow, {0}), 0);  // a straggler
  // With the straggler every rank runs, and its DP peers wait for it: the step is longer than without.
  EXPECT_GT(run(test::job_from_yaml(slow), false, {0}).result.step_ns, run(test::job_from_yaml(base), false, {0}).result.step_ns);
  // 3 GPUs per node: ranks of one DP group sit at different offsets within their nodes, so their TP groups' geometry
  // differs from their representatives' (a TP pair split across two nodes).
  std::string odd = test::small_gpt_yaml(2, 1, 3, 6);
  odd.replace(odd.find("gpus_per_node: 8"), 16, "gpus_per_node: 3");
  EXPECT_EQ(mirrored(odd, {0}), 0);
  const spec::JobSpec j = test::job_from_yaml(odd);
  expect_same(run(j, true, {0}), run(j, false, {0}), "3 GPUs per node");
}

TEST(RankSymmetry, CliReportsAndForcesIt) {
  const std::string job = test::source_dir() + "/examples/mixtral-8x7b-ep8.yaml";
  const std::string dir = test::temp_dir();
  const test::CliResult sym = test::run_cli("simulate " + job + " --json " + dir + "/sym.json");
  ASSERT_EQ(sym.code, 0) << sym.output;
  EXPECT_NE(sym.output.find("4 representative ranks run, 60 mirror one"), std::string::npos) << sym.output;
  const test::CliResult all = test::run_cli("simulate " + job + " --all-ranks --json " + dir + "/all.json");
  ASSERT_EQ(all.code, 0) << all.output;
  EXPECT_EQ(all.output.find("representative ranks run"), std::string::npos) << all.output;
  auto j = [&](const std::string& f) { return nlohmann::json::parse(test::read_file(dir + "/" + f)); };
  nlohmann::json a = j("all.json"), s = j("sym.json");
  EXPECT_EQ(s["simulation"]["simulated_ranks"], 4);
  EXPECT_EQ(s["simulation"]["mirrored_ranks"], 60);
  EXPECT_EQ(a["simulation"]["simulated_ranks"], 64);
  EXPECT_EQ(a["simulation"]["mirrored_ranks"], 0);
  a.erase("simulation");
  s.erase("simulation");
  EXPECT_EQ(a, s);
}

}  // namespace
}  // namespace stepsim
