// Alignment speed and memory at scale (issue 5 item 4): 1,000,000 kernels against 1,000,000 log calls of one
// rank (training-like op mix, 5 % dropped from each side, seeded) must align in under 10 s and 1 GB.
// Run: build-prof/bench_align --benchmark_min_time=0.01   (peak RSS: /usr/bin/time -v build-prof/bench_align …)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "stepsim/ingest/profile/align.hpp"

namespace {

using namespace stepsim::profile;

void make(int64_t n, std::vector<AlignItem>& kernels, std::vector<AlignItem>& log) {
  std::mt19937_64 rng(42);
  kernels.clear();
  log.clear();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t u = rng() % 10;
    const NcclOp op = u < 4   ? NcclOp::AllReduce
                      : u < 6 ? NcclOp::AllGather
                      : u < 8 ? NcclOp::ReduceScatter
                      : u < 9 ? NcclOp::Broadcast
                              : NcclOp::SendRecv;
    const AlignItem it{op, op == NcclOp::AllReduce ? (rng() % 2 ? 9 : 7) : -1};
    if (rng() % 20) kernels.push_back(it);
    if (rng() % 20) log.push_back(it);
  }
}

void BM_AlignOps(benchmark::State& state) {
  std::vector<AlignItem> kernels, log;
  make(state.range(0), kernels, log);
  int64_t matched = 0;
  for (auto _ : state) {
    const AlignResult r = align_ops(kernels, log);
    matched = static_cast<int64_t>(r.matches.size());
    benchmark::DoNotOptimize(matched);
  }
  state.counters["matched"] = static_cast<double>(matched);
  state.counters["ops_per_s"] =
      benchmark::Counter(static_cast<double>(kernels.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AlignOps)->Arg(10'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
