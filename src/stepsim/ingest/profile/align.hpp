#pragma once
// Needleman-Wunsch alignment of a rank's kernel sequence (Nsight Systems) with its NCCL call sequence (log),
// with the scoring of thesis §4.2.2: match +5·w(op), mismatch −15·(w_a+w_b)/2, gap −5·(1 + 0.3·r) where r is the
// number of gaps already in the current run on the same side, and +1 for a match that continues a run of
// matches of the same operation. Weights (eq. 4.1): AllReduce 1; ReduceScatter, AllGather, Broadcast, Reduce 2;
// Send, Recv, SendRecv 0.5. End gaps are free (AlignParams::free_end_gaps; needed for the §4.3.1
// false-positive test to land on the exact segment, and for partial captures). Like the thesis' implementation the run length and the bonus follow the best path
// into each cell (a greedy state, not an extra DP dimension).
//
// Memory is linear: sequences that fit one window (kWindow kernels) are aligned globally in one table;
// longer ones are aligned window by window, each window ending free (semi-global) and only its first two thirds
// committed, so the table never exceeds kWindow × (window of log items) cells and the result is a path
// through the full matrix.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "stepsim/ingest/profile/nccl_op.hpp"

namespace stepsim::profile {

struct AlignItem {
  NcclOp op = NcclOp::Unknown;
  int datatype = -1;  // -1: unknown, matches any (the kernel of a non-reducing collective has no type)
};

struct AlignParams {
  double match = 5, mismatch = -15, gap = -5, gap_run = 0.3, sequence_bonus = 1;
  int window = 128;  // kernels per window of the linear-memory alignment
  // Leading and trailing gaps cost nothing (semi-global): a capture window of nsys inside a longer log, or
  // init-time calls before the capture, are not misalignments. Internal gaps keep the thesis' penalty.
  bool free_end_gaps = true;
};

struct AlignResult {
  std::vector<std::pair<int64_t, int64_t>> matches;  // (kernel index, log index), increasing in both
  int64_t mismatches = 0;  // diagonal steps over different operations (reported, never matched)
  int64_t gaps_kernel = 0, gaps_log = 0;  // kernels / log items left unmatched by a gap
  int max_gap_run = 0;  // longest run of consecutive gaps on one side between two aligned pairs
  double score = 0;
};

double op_weight(NcclOp op);
AlignResult align_ops(std::span<const AlignItem> kernels, std::span<const AlignItem> log, const AlignParams& p = {});

}  // namespace stepsim::profile
