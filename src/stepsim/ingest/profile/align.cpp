#include "stepsim/ingest/profile/align.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stepsim::profile {
namespace {

enum Move : uint8_t { kNone, kMatch, kMismatch, kGapLog, kGapKernel };  // kGapKernel: a kernel left unmatched

struct Cell {
  double score;
  uint16_t run;  // gaps so far in the current run of this cell's move (gap moves only)
  Move move;
  NcclOp last_match;  // op of the match this cell ends on (for the sequence bonus)
};

bool same(const AlignItem& a, const AlignItem& b) {
  return a.op == b.op && (a.datatype < 0 || b.datatype < 0 || a.datatype == b.datatype);
}

// One window: a[0..na) × b[0..nb). `free_end`: the path may end anywhere on the last row or column (the
// rest is left for the next window). Returns the moves from the start, in order.
std::vector<Move> window(std::span<const AlignItem> a, std::span<const AlignItem> b, const AlignParams& p,
                         bool free_start, bool free_end, std::vector<Move>& trace, double& score_out) {
  const size_t na = a.size(), nb = b.size(), w = nb + 1;
  trace.assign((na + 1) * w, kNone);
  std::vector<Cell> prev(w), cur(w);
  auto gap_cost = [&](uint16_t run) { return p.gap * (1.0 + p.gap_run * run); };
  prev[0] = {0, 0, kNone, NcclOp::Unknown};
  for (size_t j = 1; j <= nb; ++j) {
    const uint16_t r = static_cast<uint16_t>(std::min<size_t>(j - 1, 65535));
    prev[j] = {free_start ? 0.0 : prev[j - 1].score + gap_cost(r), static_cast<uint16_t>(free_start ? 0 : r + 1),
               kGapLog, NcclOp::Unknown};
    trace[j] = kGapLog;
  }
  double best = -std::numeric_limits<double>::infinity();
  size_t bi = na, bj = nb;
  auto consider_end = [&](const Cell& c, size_t i, size_t j) {
    if (c.score > best) {
      best = c.score;
      bi = i;
      bj = j;
    }
  };
  if (free_end && na == 0) consider_end(prev[nb], 0, nb);
  std::vector<double> wb_weight(nb);
  for (size_t j = 0; j < nb; ++j) wb_weight[j] = op_weight(b[j].op);
  for (size_t i = 1; i <= na; ++i) {
    const AlignItem& ai = a[i - 1];
    const double wa = op_weight(ai.op);
    {
      const Cell& up = prev[0];
      const uint16_t r = up.move == kGapKernel ? up.run : 0;
      cur[0] = {free_start ? 0.0 : up.score + gap_cost(r), static_cast<uint16_t>(free_start ? 0 : std::min(r + 1, 65535)),
                kGapKernel, NcclOp::Unknown};
      trace[i * w] = kGapKernel;
    }
    Move* tr = &trace[i * w];
    for (size_t j = 1; j <= nb; ++j) {
      const AlignItem& bj_item = b[j - 1];
      const Cell& d = prev[j - 1];
      Cell c;
      if (same(ai, bj_item)) {
        double s = d.score + p.match * wa;
        if (d.move == kMatch && d.last_match == ai.op) s += p.sequence_bonus;
        c = {s, 0, kMatch, ai.op};
      } else {
        c = {d.score + p.mismatch * (wa + wb_weight[j - 1]) / 2, 0, kMismatch, NcclOp::Unknown};
      }
      const Cell& up = prev[j];  // kernel i unmatched
      const uint16_t ru = up.move == kGapKernel ? up.run : 0;
      const double su = up.score + gap_cost(ru);
      if (su > c.score) c = {su, static_cast<uint16_t>(std::min(ru + 1, 65535)), kGapKernel, NcclOp::Unknown};
      const Cell& left = cur[j - 1];  // log item j unmatched
      const uint16_t rl = left.move == kGapLog ? left.run : 0;
      const double sl = left.score + gap_cost(rl);
      if (sl > c.score) c = {sl, static_cast<uint16_t>(std::min(rl + 1, 65535)), kGapLog, NcclOp::Unknown};
      cur[j] = c;
      tr[j] = c.move;
    }
    if (free_end) {
      consider_end(cur[nb], i, nb);
      if (i == na)
        for (size_t j = 0; j <= nb; ++j) consider_end(cur[j], i, j);
    }
    std::swap(prev, cur);
  }
  if (!free_end) {
    bi = na;
    bj = nb;
    best = prev[nb].score;
  }
  score_out = best;
  std::vector<Move> path;
  size_t i = bi, j = bj;
  while (i > 0 || j > 0) {
    const Move m = trace[i * w + j];
    path.push_back(m);
    if (m == kMatch || m == kMismatch) {
      --i;
      --j;
    } else if (m == kGapKernel) {
      --i;
    } else {
      --j;
    }
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace

double op_weight(NcclOp op) {
  switch (op) {
    case NcclOp::AllReduce: return 1.0;
    case NcclOp::ReduceScatter:
    case NcclOp::AllGather:
    case NcclOp::Broadcast:
    case NcclOp::Reduce: return 2.0;
    case NcclOp::Send:
    case NcclOp::Recv:
    case NcclOp::SendRecv: return 0.5;
    default: return 1.0;
  }
}

AlignResult align_ops(std::span<const AlignItem> kernels, std::span<const AlignItem> log, const AlignParams& p) {
  AlignResult r;
  const int64_t n = static_cast<int64_t>(kernels.size()), m = static_cast<int64_t>(log.size());
  const int64_t W = std::max(8, p.window);
  int64_t ia = 0, ib = 0;
  std::vector<Move> trace;
  // Gap runs between two diagonal steps count; the free flanks before the first and after the last do not.
  int run_side = 0, run = 0, stretch_max = 0;  // side of the current gap run (1 kernel, 2 log), its length
  bool seen_diagonal = false;
  auto note_gap = [&](int side) {
    run = side == run_side ? run + 1 : 1;
    run_side = side;
    stretch_max = std::max(stretch_max, run);
  };
  auto note_diagonal = [&] {
    if (seen_diagonal) r.max_gap_run = std::max(r.max_gap_run, stretch_max);
    seen_diagonal = true;
    stretch_max = 0;
    run_side = 0;
  };
  while (ia < n && ib < m) {
    const int64_t ra = n - ia, rb = m - ib;
    const int64_t wa = std::min(ra, W);
    // Log items per kernel still to go; the window leaves 25 % and 32 items of slack for local drift.
    const double ratio = static_cast<double>(rb) / static_cast<double>(ra);
    const int64_t wb = std::min<int64_t>(rb, static_cast<int64_t>(std::ceil(wa * ratio * 1.25)) + 32);
    const bool last = wa == ra && wb == rb;
    double score = 0;
    const bool first = ia == 0 && ib == 0;
    const auto path = window(kernels.subspan(ia, wa), log.subspan(ib, wb), p, first && p.free_end_gaps,
                             !last || p.free_end_gaps, trace, score);
    size_t keep = path.size();
    if (!last) {
      // Commit the first two thirds only, up to their last match, so the next window re-decides the tail.
      int64_t ca = 0, cb = 0;
      size_t k = 0, last_match = 0;
      for (; k < path.size(); ++k) {
        if (3 * ca >= 2 * wa || 3 * cb >= 2 * wb) break;
        const Move mv = path[k];
        ca += mv != kGapLog;
        cb += mv != kGapKernel;
        if (mv == kMatch) last_match = k + 1;
      }
      keep = last_match > 0 ? last_match : std::max<size_t>(k, 1);
    } else {
      r.score += score;
    }
    for (size_t k = 0; k < keep; ++k) {
      switch (path[k]) {
        case kMatch:
          r.matches.emplace_back(ia, ib);
          ++ia;
          ++ib;
          note_diagonal();
          break;
        case kMismatch:
          ++r.mismatches;
          ++ia;
          ++ib;
          note_diagonal();
          break;
        case kGapKernel:
          ++r.gaps_kernel;
          ++ia;
          note_gap(1);
          break;
        default:
          ++r.gaps_log;
          ++ib;
          note_gap(2);
          break;
      }
    }
  }
  for (; ia < n; ++ia) ++r.gaps_kernel, note_gap(1);
  for (; ib < m; ++ib) ++r.gaps_log, note_gap(2);
  return r;
}

}  // namespace stepsim::profile
