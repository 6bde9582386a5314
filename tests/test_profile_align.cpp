// Alignment of kernels with NCCL log calls: the five tests of thesis §4.3.1 and the four-scenario benchmark of
// §4.3.2 (4 ranks × 200 ops, 20 % dropped from either or both sources; Table 4.5: average F1 0.893).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "stepsim/ingest/profile/align.hpp"

namespace stepsim::profile {
namespace {

using enum NcclOp;

std::vector<AlignItem> seq(std::initializer_list<NcclOp> ops) {
  std::vector<AlignItem> v;
  for (auto o : ops) v.push_back({o, -1});
  return v;
}

// §4.3.1 asymmetric penalty: Broadcast vs Send costs −15·(2+0.5)/2 = −18.75 as a mismatch, −5 −5 = −10 as two
// gaps (one on each side, each the first of its run), so the alignment takes the gaps: 3 matches, 2 gaps.
TEST(ProfileAlign, AsymmetricPenaltyPrefersGaps) {
  const auto n = seq({AllReduce, AllReduce, Broadcast, AllReduce});
  const auto l = seq({AllReduce, AllReduce, Send, AllReduce});
  const AlignResult r = align_ops(n, l);
  EXPECT_EQ(r.matches.size(), 3u);
  EXPECT_EQ(r.mismatches, 0);
  EXPECT_EQ(r.gaps_kernel + r.gaps_log, 2);
  // Hand-computed score: matches 5, 5+1 (bonus, same op as the previous match), gaps −5, −5, match 5.
  EXPECT_DOUBLE_EQ(r.score, 5 + 6 - 5 - 5 + 5);
}

// §4.3.1 false-positive prevention: the kernels must land on segment 2 (the exact copy), ≥ 75 % of matches.
TEST(ProfileAlign, FalsePositivePreventionPicksExactSegment) {
  const auto n = seq({AllReduce, AllReduce, Broadcast, ReduceScatter});
  const auto l = seq({AllReduce, AllReduce, AllReduce, ReduceScatter,   // segment 1: index 0..3
                      AllReduce, AllReduce, Broadcast, ReduceScatter,   // segment 2: index 4..7
                      AllReduce, Broadcast, AllReduce, ReduceScatter});  // segment 3: index 8..11
  const AlignResult r = align_ops(n, l);
  ASSERT_EQ(r.matches.size(), 4u);
  int in_segment2 = 0;
  for (auto [a, b] : r.matches) in_segment2 += b >= 4 && b < 8;
  EXPECT_GE(in_segment2 * 4, 3 * static_cast<int>(r.matches.size()));
  EXPECT_EQ(in_segment2, 4);
}

// §4.3.1 consecutive duplication: every log op twice; all 5 kernels matched, 0 mismatches, 50 % of log skipped.
TEST(ProfileAlign, ConsecutiveDuplicationMatchesAll) {
  const auto n = seq({AllReduce, Broadcast, AllGather, ReduceScatter, AllReduce});
  const auto l = seq({AllReduce, AllReduce, Broadcast, Broadcast, AllGather, AllGather, ReduceScatter, ReduceScatter,
                      AllReduce, AllReduce});
  const AlignResult r = align_ops(n, l);
  EXPECT_EQ(r.matches.size(), 5u);
  EXPECT_EQ(r.mismatches, 0);
  EXPECT_EQ(r.gaps_kernel, 0);
  EXPECT_EQ(r.gaps_log, 5);  // skip percentage 5/10 = 50 %
  for (auto [a, b] : r.matches) EXPECT_EQ(l[b].op, n[a].op);
}

// §4.3.1 sequence bonus: identical sequences with runs align i = j everywhere.
TEST(ProfileAlign, SequenceBonusPerfectAlignment) {
  const auto s = seq({AllReduce, AllReduce, AllReduce, AllReduce, AllReduce, Broadcast, ReduceScatter, ReduceScatter,
                      ReduceScatter});
  const AlignResult r = align_ops(s, s);
  ASSERT_EQ(r.matches.size(), s.size());
  for (auto [a, b] : r.matches) EXPECT_EQ(a, b);
  // AllReduce ×5: 5 + 4·(5+1) = 29; Broadcast: 5·2 = 10; ReduceScatter ×3: 10 + 2·(10+1) = 32; total 71.
  EXPECT_DOUBLE_EQ(r.score, 71);
}

// §4.3.1 adaptive gap penalty: the three log-only ops cost −5, −6.5, −8 in one run; interleaving a kernel-side
// gap breaks the run (−5 −6.5 −5 −5 = −21.5 > −19.5 −5), so no run is longer than 2.
TEST(ProfileAlign, AdaptiveGapPenaltyKeepsRunsShort) {
  const auto n = seq({AllReduce, AllReduce, AllReduce, AllReduce, AllReduce});
  const auto l = seq({AllReduce, Broadcast, Send, Recv, AllReduce, AllReduce, AllReduce});
  const AlignResult r = align_ops(n, l);
  EXPECT_LE(r.max_gap_run, 2);
  EXPECT_EQ(r.mismatches, 0);
  EXPECT_GE(r.matches.size(), 3u);
}

// The windowed (linear-memory) path agrees with one global table when the sequences are identical and long.
TEST(ProfileAlign, WindowedIdentityIsExact) {
  std::vector<AlignItem> s;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5000; ++i) s.push_back({static_cast<NcclOp>(rng() % 5), -1});
  const AlignResult r = align_ops(s, s);
  ASSERT_EQ(r.matches.size(), s.size());
  for (auto [a, b] : r.matches) ASSERT_EQ(a, b);
}

struct Scores {
  double precision, recall, f1;
};

// One §4.3.2 scenario: 4 ranks × 200 ops of a training-like mix, each op dropped with probability 1/5 from the
// kernels and/or the log (seeded); ground truth = ops present in both. Ops: AllReduce 40 %, AllGather 20 %,
// ReduceScatter 20 %, Broadcast 10 %, SendRecv 10 %; reducing ops carry bf16 or fp32.
Scores scenario(bool drop_nsys, bool drop_log, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int64_t tp = 0, fp = 0, fn = 0;
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<AlignItem> kernels, log;
    std::vector<int> kernel_id, log_id;
    for (int i = 0; i < 200; ++i) {
      const uint64_t u = rng() % 10;
      const NcclOp op = u < 4 ? AllReduce : u < 6 ? AllGather : u < 8 ? ReduceScatter : u < 9 ? Broadcast : SendRecv;
      const int dt = (op == AllReduce || op == ReduceScatter) ? (rng() % 2 ? 9 : 7) : -1;
      const bool in_k = !(drop_nsys && rng() % 5 == 0);
      const bool in_l = !(drop_log && rng() % 5 == 0);
      if (in_k) kernels.push_back({op, dt}), kernel_id.push_back(i);
      if (in_l) log.push_back({op, dt}), log_id.push_back(i);
    }
    std::set<int> truth;
    {
      std::set<int> k(kernel_id.begin(), kernel_id.end());
      for (int i : log_id)
        if (k.count(i)) truth.insert(i);
    }
    const AlignResult r = align_ops(kernels, log);
    int64_t correct = 0;
    for (auto [a, b] : r.matches) correct += kernel_id[a] == log_id[b];
    tp += correct;
    fp += static_cast<int64_t>(r.matches.size()) - correct;
    fn += static_cast<int64_t>(truth.size()) - correct;
  }
  const double p = tp + fp ? static_cast<double>(tp) / (tp + fp) : 0;
  const double rc = tp + fn ? static_cast<double>(tp) / (tp + fn) : 0;
  return {p, rc, p + rc > 0 ? 2 * p * rc / (p + rc) : 0};
}

TEST(ProfileAlign, Table45BenchmarkF1) {
  const Scores easy = scenario(false, false, 1), nsys = scenario(true, false, 2), nccl = scenario(false, true, 3),
               both = scenario(true, true, 4);
  const double avg = (easy.f1 + nsys.f1 + nccl.f1 + both.f1) / 4;
  std::printf("F1 easy %.3f nsys-drop %.3f nccl-drop %.3f both-drop %.3f average %.3f\n", easy.f1, nsys.f1, nccl.f1,
              both.f1, avg);
  std::printf("precision/recall: %.3f/%.3f %.3f/%.3f %.3f/%.3f %.3f/%.3f\n", easy.precision, easy.recall,
              nsys.precision, nsys.recall, nccl.precision, nccl.recall, both.precision, both.recall);
  EXPECT_DOUBLE_EQ(easy.f1, 1.0);
  EXPECT_GE(avg, 0.893);  // thesis Table 4.5
  EXPECT_GE(nccl.f1, 0.868);
  EXPECT_GE(both.f1, 0.805);
}

}  // namespace
}  // namespace stepsim::profile
