// Trace-driven simulation (`stepsim simulate JOB --workload DIR`): hand-made workload files whose step time follows
// from the engine's rules by hand (a collective starts at its last member's arrival; measured compute durations are
// kept; host gaps keep the GPU idle), dependency inference from measured times, reuse of a traced rank by its
// data-parallel peers, the deadlock checks, the ex-situ tracer's format, and the 8 real DLRM ranks.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/trace_workload.hpp"
#include "stepsim/ingest/trace/traced_program_json.hpp"
#include "stepsim/ingest/trace/workload_dir.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::trace {
namespace {

using nlohmann::json;

constexpr int64_t kUs = 1000;

using test::real;  // one definition for every test file (unity build batches)

// A folder of its own per test, with the rank files given.
std::string workload_dir(const std::string& name, const std::vector<json>& ranks) {
  const std::string dir = test::temp_dir() + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const json& r : ranks) std::ofstream(dir + "/rank" + std::to_string(r["rank"].get<int>()) + ".json") << r.dump();
  return dir;
}

// ops as a vector: a one-element braced json list would be that element, not an array of it.
json program(int rank, int world, const std::vector<json>& ops) {
  return {{"format", "stepsim-trace-program"}, {"version", 1}, {"rank", rank}, {"world_size", world}, {"ops", ops}};
}
json compute(const std::string& name, int64_t us, json after = json::array()) {
  return {{"kind", "compute"}, {"name", name}, {"duration_ns", us * kUs}, {"category", "gemm"}, {"after", after}};
}
json allreduce(uint64_t bytes, const std::vector<int>& ranks, json after = json::array()) {
  return {{"kind", "collective"}, {"name", "ncclKernel_AllReduce"}, {"coll", "all_reduce"}, {"bytes", bytes},
          {"group_ranks", ranks}, {"after", after}};
}

sim::Simulation simulate_dir(const std::string& yaml, const std::string& dir, const std::vector<int>& record,
                             TraceWorkloadOptions opt = {}) {
  const spec::JobSpec job = test::job_from_yaml(yaml);
  TraceWorkload tw = build_trace_workload(job, read_workload_dir(dir), opt);
  return sim::run_workload(stepsim::catalog::shipped(), std::move(tw.workload), record);
}

int64_t allreduce_ns(const std::string& yaml, uint64_t bytes, int ranks) {
  const spec::JobSpec job = test::job_from_yaml(yaml);
  return sim::make_collective_model(stepsim::catalog::shipped(), job)->collective_ns(workload::CollType::AllReduce, bytes, {ranks, 1, ranks});
}

const sim::RankTimeline& timeline(const sim::Simulation& s, int rank) {
  for (const auto& t : s.result.recorded) {
    if (t.rank == rank) return t;
  }
  throw std::logic_error("rank not recorded");
}

// Rank 1 computes 300 us before the all-reduce, rank 0 100 us: the all-reduce starts at 300 us on both (Echo's
// synchronisation), takes the model's time T, then both compute 50 us: step = 300 us + T + 50 us. Rank 0 waits
// 200 us, which the breakdown counts as waiting (bubble), not as communication.
TEST(TraceSimulation, CollectiveWaitsForItsLastMember) {
  const std::string yaml = test::small_gpt_yaml(1, 1, 2, 2);
  const uint64_t mib = 1 << 20;
  const std::string dir =
      workload_dir("straggler", {program(0, 2, {compute("a", 100), allreduce(mib, {0, 1}, {0}), compute("b", 50, {1})}),
                                 program(1, 2, {compute("a", 300), allreduce(mib, {0, 1}, {0}), compute("b", 50, {1})})});
  const sim::Simulation s = simulate_dir(yaml, dir, {0, 1});
  const int64_t t = allreduce_ns(yaml, mib, 2);
  ASSERT_GT(t, 0);
  EXPECT_EQ(s.result.step_ns, 300 * kUs + t + 50 * kUs);
  const auto& ops = timeline(s, 0).ops;
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[1].post_ns, 100 * kUs);   // rank 0 arrives at 100 us
  EXPECT_EQ(ops[1].begin_ns, 300 * kUs);  // and begins with rank 1
}

// An explicit-peer send: rank 1's receive completes p2p time after rank 0 posts its send at 100 us.
TEST(TraceSimulation, SendRecvWithExplicitPeers) {
  const std::string yaml = test::small_gpt_yaml(1, 1, 2, 2);
  const uint64_t bytes = 4 << 20;
  const json send = {{"kind", "p2p"}, {"name", "send"}, {"sends", {{{"peer", 1}, {"bytes", bytes}}}}, {"after", {0}}};
  const json recv = {{"kind", "p2p"}, {"name", "recv"}, {"recvs", {{{"peer", 0}, {"bytes", bytes}}}}};
  const std::string dir = workload_dir("p2p", {program(0, 2, {compute("a", 100), send}),
                                               program(1, 2, {recv, compute("b", 20, {0})})});
  const sim::Simulation s = simulate_dir(yaml, dir, {1});
  const spec::JobSpec job = test::job_from_yaml(yaml);
  const int64_t p2p = sim::make_collective_model(stepsim::catalog::shipped(), job)->p2p_ns(bytes, true);
  EXPECT_EQ(s.result.step_ns, 100 * kUs + p2p + 20 * kUs);
}

// TP 2 x DP 2 with only ranks 0 and 1 traced: ranks 2 and 3 (dp 1) run those programs with their own TP group
// [2, 3] and the DP groups [0, 2], [1, 3] stay as they are; every group is symmetric, so the step is
// 100 us + T(tp, 1 MiB over 2) + T(dp, 4 MiB over 2).
TEST(TraceSimulation, UntracedRanksReuseADataParallelPeer) {
  const std::string yaml = test::small_gpt_yaml(2, 1, 2, 2);
  const uint64_t mib = 1 << 20;
  auto rank = [&](int r) {
    return program(r, 4, {compute("a", 100), allreduce(mib, {0, 1}, {0}), allreduce(4 * mib, {r, r + 2}, {1})});
  };
  const std::string dir = workload_dir("reuse", {rank(0), rank(1)});
  const spec::JobSpec job = test::job_from_yaml(yaml);
  TraceWorkload tw = build_trace_workload(job, read_workload_dir(dir));
  EXPECT_EQ(tw.traced, 2);
  EXPECT_EQ(tw.source_of_rank, (std::vector<int>{0, 1, 0, 1}));
  const auto& w = tw.workload;
  auto groups_of = [&](int r) {
    std::vector<std::vector<int>> g;
    for (int c : w.bindings[r].comms) g.push_back(w.communicators[c]);
    return g;
  };
  EXPECT_EQ(groups_of(2), (std::vector<std::vector<int>>{{2, 3}, {0, 2}}));
  EXPECT_EQ(groups_of(3), (std::vector<std::vector<int>>{{2, 3}, {1, 3}}));
  EXPECT_EQ(w.communicators.size(), 4u);
  const sim::Simulation s = sim::run_workload(stepsim::catalog::shipped(), std::move(tw.workload), {0});
  // One node of 8: each group has 2 ranks on one node.
  EXPECT_EQ(s.result.step_ns, 100 * kUs + allreduce_ns(yaml, mib, 2) + allreduce_ns(yaml, 4 * mib, 2));
}

TEST(TraceSimulation, MismatchedCommunicationIsAnInputError) {
  const std::string yaml = test::small_gpt_yaml(1, 1, 2, 2);
  const std::string bad_bytes = workload_dir("mismatch", {program(0, 2, {allreduce(1024, {0, 1})}),
                                                          program(1, 2, {allreduce(2048, {0, 1})})});
  try {
    simulate_dir(yaml, bad_bytes, {0});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("communicator [0, 1]: collective #0 differs"), std::string::npos) << m;
    EXPECT_NE(m.find("1024 B"), std::string::npos) << m;
    EXPECT_NE(m.find("2048 B"), std::string::npos) << m;
  }
  const json send = {{"kind", "p2p"}, {"name", "send"}, {"sends", {{{"peer", 1}, {"bytes", 64}}}}};
  const std::string lonely = workload_dir("lonely", {program(0, 2, {send}), program(1, 2, {compute("a", 1)})});
  EXPECT_THROW(simulate_dir(yaml, lonely, {0}), InputError);
  // Through the CLI: exit 2 and one line.
  const std::string job = test::write_temp("dp2.yaml", yaml);
  const auto r = test::run_cli("simulate " + job + " --workload " + lonely);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("send/recv from rank 0 to rank 1: 1 sends but 0 receives"), std::string::npos) << r.output;
}

// An imported trace (no `after`): measured A [0, 100], all-reduce C [100, 400], D [120, 170], B [450, 460] us.
// Inferred: C waits for A; D started while C ran, so it does not wait, and the 20 us before it (A ended at 100) is
// a host gap; B started after C ended (400), so it waits for C, and 450 - 400 = 50 us is a host gap.
// Simulated with the model's all-reduce time T (< 70 us here): A 0-100, gap 100-120, D 120-170, gap 170-220 (C has
// ended by 100 + T), B 220-230: step 230 us. Without host gaps: A, D 100-150, B 150-160: 160 us.
// A traced workload keeps its measured kernel times: the slowdown they suffered beside communication is in them, so the
// default overlap model (sm_share) is not applied again unless the job names one (docs/OVERLAP.md).
TEST(TraceSimulation, MeasuredKernelsAreNotSlowedAgainUnlessTheJobSaysSo) {
  auto rank = [](int r) {
    json a = compute("A", 100), c = allreduce(1 << 20, {0, 1});
    return program(r, 2, {a, c});
  };
  const std::string dir = workload_dir("overlap-default", {rank(0), rank(1)});
  const spec::JobSpec plain = test::job_from_yaml(test::small_gpt_yaml(1, 1, 2, 2));
  EXPECT_EQ(plain.simulation.overlap_model, spec::OverlapModel::SmShare);
  EXPECT_FALSE(plain.simulation.overlap_model_given);
  EXPECT_EQ(build_trace_workload(plain, read_workload_dir(dir)).workload.job.simulation.overlap_model,
            spec::OverlapModel::None);
  const spec::JobSpec named =
      test::job_from_yaml(test::small_gpt_yaml(1, 1, 2, 2, "", "", ", overlap_model: sm_share"));
  EXPECT_TRUE(named.simulation.overlap_model_given);
  EXPECT_EQ(build_trace_workload(named, read_workload_dir(dir)).workload.job.simulation.overlap_model,
            spec::OverlapModel::SmShare);
}

TEST(TraceSimulation, ImportedTraceDependenciesAndHostGaps) {
  const std::string yaml = test::small_gpt_yaml(1, 1, 2, 2);
  auto rank = [](int r) {
    json a = compute("A", 100), c = allreduce(1 << 20, {0, 1}), d = compute("D", 50), b = compute("B", 10);
    for (json* op : {&a, &c, &d, &b}) op->erase("after");
    a["start_ns"] = 0;
    c["start_ns"] = 100 * kUs;
    c["duration_ns"] = 300 * kUs;
    d["start_ns"] = 120 * kUs;
    b["start_ns"] = 450 * kUs;
    return program(r, 2, {a, c, d, b});
  };
  const std::string dir = workload_dir("infer", {rank(0), rank(1)});
  ASSERT_LT(allreduce_ns(yaml, 1 << 20, 2), 70 * kUs);
  const sim::Simulation with = simulate_dir(yaml, dir, {0});
  EXPECT_EQ(with.result.step_ns, 230 * kUs);
  const workload::Program& p = with.workload.program_of_rank(0);
  ASSERT_EQ(p.ops.size(), 6u);  // A, C, gap, D, gap, B
  EXPECT_EQ(p.ops[2].category, workload::ComputeCategory::Host);
  EXPECT_EQ(p.ops[2].duration_ns, 20 * kUs);
  EXPECT_EQ(p.ops[4].duration_ns, 50 * kUs);
  ASSERT_EQ(p.ops[5].wait_count, 1);  // B waits for C on the dp stream
  EXPECT_EQ(p.waits[p.ops[5].wait_begin].stream, workload::Stream::Dp);
  const sim::Simulation without = simulate_dir(yaml, dir, {0}, {false});
  EXPECT_EQ(without.result.step_ns, 160 * kUs);
}

// The step starts at its ProfilerStep's CPU start, or where the previous step's kernels ended if later: the GPU
// idle until the step's first kernel is a host gap. One rank (dp 1), two steps on the ops' clock: step 1's kernel
// ends at 100 us; step 2 starts (CPU) at 80 us and its kernel runs [130, 170] us. Leading gap = 130 - max(80, 100) =
// 30 us, so step 2 takes 30 + 40 = 70 us. If the file gives no start for step 2, the step begins at its first kernel:
// 40 us.
TEST(TraceSimulation, LeadingHostGapFromTheProfilerStepStart) {
  const std::string yaml = test::small_gpt_yaml(1, 1, 1, 1);
  auto kernel = [](int64_t start_us, int64_t dur_us, int step) {
    json k = compute("k", dur_us);
    k.erase("after");
    k["start_ns"] = start_us * kUs;
    k["step"] = step;
    return k;
  };
  json p = program(0, 1, {kernel(0, 100, 1), kernel(130, 40, 2)});
  p["steps"] = {{{"number", 1}, {"start_ns", -20 * kUs}, {"duration_ns", 100 * kUs}},
                {{"number", 2}, {"start_ns", 80 * kUs}, {"duration_ns", 95 * kUs}}};
  sim::Simulation s = simulate_dir(yaml, workload_dir("lead", {p}), {0});
  EXPECT_EQ(s.result.step_ns, 70 * kUs);
  p["steps"][1].erase("start_ns");
  s = simulate_dir(yaml, workload_dir("lead2", {p}), {0});
  EXPECT_EQ(s.result.step_ns, 40 * kUs);
}

// The ex-situ tracer's format: top-level op "fwd" [0, 100] us holds the all-reduce call #0 at [40, 50]; "opt" runs
// [120, 150]. Pieces: fwd 40 us, the all-reduce, fwd 50 us (after it: a blocking call), a 20 us host gap, opt 30 us.
// On one rank the all-reduce is a no-op collective of 1: step = 140 us + T(1 rank). Memory: fwd allocates 1000 B
// net, opt frees 400: peak 1000 B.
TEST(TraceSimulation, TracerWorkloadFormat) {
  const std::string yaml = test::small_gpt_yaml(1, 1, 1, 1);
  const json w = {
      {"format", "stepsim.workload"}, {"version", 1}, {"rank", 0}, {"world_size", 1}, {"device", "cpu"},
      {"comm", {{{"index", 0}, {"op", "all_reduce"}, {"group_ranks", {0}}, {"bytes", 1024}, {"dtype", "float32"},
                 {"async", false}}}},
      {"ops",
       {{{"id", 1}, {"name", "fwd"}, {"parent", nullptr}, {"start_us", 0}, {"dur_us", 100}, {"cpu_memory_bytes", 1000}},
        {{"id", 2}, {"name", "stepsim.comm#0"}, {"parent", 1}, {"start_us", 40}, {"dur_us", 10}, {"comm_index", 0}},
        {{"id", 3}, {"name", "opt"}, {"parent", nullptr}, {"start_us", 120}, {"dur_us", 30}, {"cpu_memory_bytes", -400}}}}};
  const std::string dir = test::temp_dir() + "tracer";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/rank0.workload.json") << w.dump();
  const TracedRank tr = read_traced_rank(dir + "/rank0.workload.json");
  ASSERT_EQ(tr.ops.size(), 5u);
  EXPECT_EQ(tr.ops[0].duration_ns, 40 * kUs);
  EXPECT_EQ(tr.ops[1].kind, workload::OpKind::Collective);
  EXPECT_EQ(tr.ops[2].after, (std::vector<int>{1}));
  EXPECT_EQ(tr.ops[3].category, workload::ComputeCategory::Host);
  EXPECT_DOUBLE_EQ(*tr.measured_step_s, 150e-6);
  const sim::Simulation s = simulate_dir(yaml, dir, {0});
  EXPECT_EQ(s.result.step_ns, 140 * kUs + allreduce_ns(yaml, 1024, 1));
  EXPECT_EQ(s.result.peak_bytes[0], 1000);
}

// The 8 DLRM ranks of ../shared/data/real/param/dlrm_kineto (8 V100s), imported and replayed on the test job (8 H100s,
// one node): the communication
// of each rank is what the import found (docs/TRACES.md: all-to-all 24576 + 192 + 1536 + 13568 + 24576 B, all-reduce
// 1576964 + 448 + 907840 B, all on the world, as the trace gives no groups), and the prediction lands within 25% of
// the measured ProfilerStep#10 of rank 0 (14.455 ms; -10.7% when this test was written).
TEST(TraceSimulation, RealDlrmEightRanks) {
  std::string args = "trace import --quiet --out " + test::temp_dir() + "dlrm";
  for (const auto& e : std::filesystem::directory_iterator(real("param/dlrm_kineto"))) args.append(" ").append(e.path().string());
  ASSERT_EQ(test::run_cli(args).code, 0);
  const std::string yaml = test::small_gpt_yaml(1, 1, 8, 8);
  const std::string job = test::write_temp("dlrm8.yaml", yaml);
  const std::string out = test::temp_dir() + "dlrm-sim.json";
  const auto r = test::run_cli("simulate " + job + " --workload " + test::temp_dir() + "dlrm --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const json s = json::parse(test::read_file(out));
  EXPECT_EQ(s["workload"]["traced_ranks"], 8);
  EXPECT_EQ(s["comm_message_bytes_per_rank"]["ep"], 24576 + 192 + 1536 + 13568 + 24576);
  EXPECT_EQ(s["comm_message_bytes_per_rank"]["dp"], 1576964 + 448 + 907840);
  EXPECT_DOUBLE_EQ(s["workload"]["measured_step_s"].get<double>(), 0.014455);
  const double step = s["step_time_s"];
  EXPECT_NEAR(step, 0.014455, 0.25 * 0.014455);
  EXPECT_GT(s["breakdown_s"]["host_gap"].get<double>(), 0.0);
}

// HTA's df_index_resolver trace (rank 1 of 2, ProfilerSteps 2-6, 26,770 GPU [memory] events (Device Type 1; 1,240 CPU ones dropped), 404 all-reduces whose
// kernels carry no message size): the memory timeline charged from the traced allocations (Echo Fig. 8) peaks within
// 1% of the largest "Total Allocated" the trace records (6,629,508,096 B, read with jq over its [memory] events);
// the static part is the first event's Total Allocated before its own allocation, 4,096,614,400 B, plus what the
// four earlier steps left allocated (0 B net here). The size-less all-reduces replay their measured time, and the
// step is compared with the last ProfilerStep's span, 336.328 ms.
TEST(TraceSimulation, RealMemoryTimelineAndSizelessCollectives) {
  const std::string dir = test::temp_dir() + "dfi";
  ASSERT_EQ(test::run_cli("trace import --quiet --out " + dir + " " + real("hta/df_index_resolver/df_index_resolver.json.gz")).code, 0);
  const json rank1 = json::parse(test::read_file(dir + "/rank1.json"));
  EXPECT_EQ(rank1["memory_events"], 26770);
  EXPECT_EQ(rank1["static_memory_bytes"], 4096614400);
  ASSERT_EQ(rank1["steps"].size(), 5u);
  EXPECT_EQ(rank1["steps"][4]["duration_ns"], 336328000);
  const std::string job = test::write_temp("dfi.yaml", test::small_gpt_yaml(1, 1, 2, 2));
  const std::string out = test::temp_dir() + "dfi-sim.json";
  const auto r = test::run_cli("simulate " + job + " --workload " + dir + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const json s = json::parse(test::read_file(out));
  EXPECT_EQ(s["workload"]["reused_ranks"], 1);
  EXPECT_EQ(s["workload"]["measured_comm_ops"], 404);
  EXPECT_DOUBLE_EQ(s["workload"]["measured_step_s"].get<double>(), 0.336328);
  const json& stage = s["memory"]["per_stage"][0];
  EXPECT_EQ(stage["static_bytes"], 4096614400);
  EXPECT_NEAR(stage["peak_bytes"].get<double>(), 6629508096.0, 0.01 * 6629508096.0);
  EXPECT_NEAR(s["step_time_s"].get<double>(), 0.336328, 0.25 * 0.336328);
}

// Found by fuzz/fuzz_workload_dir.cpp: an ex-situ workload whose all-reduce lists rank 0 twice deadlocked the engine
// (the communicator waited for a second member that never comes); it must be an input error naming the op.
TEST(TraceSimulation, DuplicateGroupRankIsAnInputError) {
  const json w = {{"format", "stepsim.workload"}, {"version", 1}, {"rank", 0}, {"world_size", 2}, {"device", "cpu"},
                  {"comm", {{{"index", 0}, {"op", "all_reduce"}, {"group_ranks", {0, 0}}, {"bytes", 1024},
                             {"dtype", "float32"}, {"async", false}}}},
                  {"ops", {{{"id", 1}, {"name", "stepsim.comm#0"}, {"parent", nullptr}, {"start_us", 0}, {"dur_us", 10},
                            {"comm_index", 0}}}}};
  std::vector<TracedRank> ranks;
  ranks.push_back(parse_traced_rank(w.dump(), "rank0.workload.json"));
  try {
    build_trace_workload(test::job_from_yaml(test::small_gpt_yaml(1, 1, 2, 2)), std::move(ranks));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("list a rank twice"), std::string::npos) << e.what();
  }
}

// Found by fuzz/fuzz_workload_dir.cpp: both ranks receive from each other before they send. Every send has its
// receive (the matching check passes), but no run could complete in this order: exit 2, naming the directory.
TEST(TraceSimulation, ReceiveBeforeSendOnBothSidesExitsTwo) {
  auto part = [](const char* dir, int peer) {
    return json{{"kind", "p2p"}, {"name", dir}, {dir, {{{"peer", peer}, {"bytes", 64}}}}};
  };
  std::vector<json> ranks;
  for (int r = 0; r < 2; ++r) {
    std::vector<json> ops = {part("recvs", 1 - r), part("sends", 1 - r)};
    ops[1]["after"] = {0};
    ops[0]["after"] = json::array();
    ranks.push_back(program(r, 2, ops));
  }
  const std::string dir = workload_dir("recvfirst", ranks);
  const std::string job = test::write_temp("dp2r.yaml", test::small_gpt_yaml(1, 1, 2, 2));
  const auto r = test::run_cli("simulate " + job + " --workload " + dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot complete in this order"), std::string::npos) << r.output;
}

// Found by fuzz/fuzz_workload_dir.cpp (UBSan): a start time of 1.8e28 us overflowed the conversion to nanoseconds.
TEST(TraceSimulation, HugeTracerTimesAreInputErrors) {
  const json w = {{"format", "stepsim.workload"}, {"version", 1}, {"rank", 0}, {"world_size", 1}, {"device", "cpu"},
                  {"comm", json::array()},
                  {"ops", {{{"id", 1}, {"name", "opt"}, {"parent", nullptr}, {"start_us", 1.8e28}, {"dur_us", 30}}}}};
  try {
    parse_traced_rank(w.dump(), "rank0.workload.json");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("start_us: must be below 10^12 microseconds"), std::string::npos) << e.what();
  }
}

TEST(TraceSimulation, MessagesAbove2To50BytesAreInputErrors) {
  // A 2^63-byte all-reduce timed a 237-day step before; a message larger than 1 PiB is a corrupted file.
  const std::string dir = workload_dir("huge-message", {program(0, 2, {allreduce(uint64_t{1} << 63, {0, 1})}),
                                                       program(1, 2, {allreduce(uint64_t{1} << 63, {0, 1})})});
  try {
    read_workload_dir(dir);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ops[0].bytes: must be at most 2^50 bytes (1 PiB)"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(read_workload_dir(workload_dir("pib-message", {program(0, 1, {allreduce(uint64_t{1} << 50, {0})})})));
}

TEST(TraceSimulation, BadWorkloadsExitTwo) {
  const std::string job = test::write_temp("dp2b.yaml", test::small_gpt_yaml(1, 1, 2, 2));
  const std::string dir = test::temp_dir() + "bad";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/rank0.json") << "{\"format\": \"stepsim-trace-program\", \"version\": 1, \"rank\": 0, \"ops\": [";
  auto r = test::run_cli("simulate " + job + " --workload " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("rank0.json: not JSON"), std::string::npos) << r.output;
  std::ofstream(dir + "/rank0.json") << program(0, 4, {}).dump();
  r = test::run_cli("simulate " + job + " --workload " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("world_size 4, but the job runs 2 GPUs"), std::string::npos) << r.output;
  std::ofstream(dir + "/rank0.json") << program(0, 2, {{{"kind", "collective"}, {"name", 0}, {"coll", "all_reduce"},
                                                       {"bytes", nullptr}}}).dump();
  r = test::run_cli("simulate " + job + " --workload " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("ops[0].name: index 0 is beyond `names`"), std::string::npos) << r.output;
  std::ofstream(dir + "/rank0.json") << program(0, 2, {{{"kind", "collective"}, {"name", "x"}, {"coll", "all_reduce"},
                                                       {"bytes", nullptr}}}).dump();
  r = test::run_cli("simulate " + job + " --workload " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("ops[0].bytes: is null"), std::string::npos) << r.output;
  std::ofstream(dir + "/rank0.json") << program(0, 2, {compute("a", 1)}).dump();
  r = test::run_cli("simulate " + job + " --workload " + dir);  // rank 1 (dp 1) reuses rank 0: fine
  EXPECT_EQ(r.code, 0) << r.output;
  // Found by the fuzzing campaign (2026-11-26): a duration past int64 read as the largest one and overflowed the
  // engine's clock (UBSan). Op times are bounded at 100 s, the limit named.
  std::ofstream(dir + "/rank0.json")
      << program(0, 2, {{{"kind", "compute"}, {"name", "a"}, {"duration_ns", 11111111111111111000ull}, {"category", "gemm"}}})
             .dump();
  r = test::run_cli("simulate " + job + " --workload " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("ops[0].duration_ns: must be at most 100000000000 (100 s)"), std::string::npos) << r.output;
  r = test::run_cli("simulate " + job + " --workload " + dir + "/nope");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("must be a directory"), std::string::npos) << r.output;
  r = test::run_cli("simulate " + job + " --step 3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--step needs --workload DIR"), std::string::npos) << r.output;
}

// Issue 48 item 4: the per-file limit did not bound a folder: four rank files near it took 4.9 GB and a minute. The
// folder's total is checked from the file sizes before any is read (sparse files here: nothing is parsed), and the
// writers that fill a folder keep to the same total.
TEST(TraceSimulation, AWorkloadFolderAboveItsTotalIsRefusedBeforeAnyFileIsRead) {
  const std::string job = test::write_temp("dp2big.yaml", test::small_gpt_yaml(1, 1, 2, 2));
  const std::string dir = test::temp_dir() + "big_workload";
  std::filesystem::create_directories(dir);
  for (int r = 0; r < 2; ++r) {
    const std::string path = dir + "/rank" + std::to_string(r) + ".json";
    std::ofstream(path) << "{";
    std::filesystem::resize_file(path, uintmax_t{70} << 20);
  }
  const auto start = std::chrono::steady_clock::now();
  const auto r = test::run_cli("simulate " + job + " --workload " + dir);
  EXPECT_LT(std::chrono::steady_clock::now() - start, test::kRefusalTime);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(dir + ": the rank files hold 140 MiB together, more than the 96 MiB `simulate --workload` "
                          "reads from one folder"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
  RankFileBudget budget("out");
  budget.add(uintmax_t{90} << 20);
  EXPECT_EQ(test::error_of([&] { budget.add(uintmax_t{6} << 20); }), "<no error>");
  EXPECT_NE(test::error_of([&] { budget.add(1); }).find("out: the rank files hold 97 MiB together"),
            std::string::npos);
}

// A writer refused part-way (the folder's budget spent by its second rank) leaves none of its rank files: a folder
// holding rank 0 alone would replay it for every rank with exit 0. A committed write keeps them.
TEST(TraceWorkload, ARefusedWriteLeavesNoPartOfTheWorkload) {
  const std::string dir = test::temp_dir() + "budget-refused";
  std::filesystem::create_directories(dir);
  {
    RankFileBudget budget(dir);
    write_rank_file(dir + "/rank0.json", "{}\n", &budget);
    EXPECT_TRUE(std::filesystem::exists(dir + "/rank0.json"));
    EXPECT_NE(test::error_of([&] { budget.add(kMaxWorkloadBytes); }).find("more than the 96 MiB"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/rank0.json"));
  {
    RankFileBudget budget(dir);
    write_rank_file(dir + "/rank0.json", "{}\n", &budget);
    write_rank_file(dir + "/rank1.json", "{}\n", &budget);
    budget.commit();
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/rank0.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/rank1.json"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stepsim::trace
