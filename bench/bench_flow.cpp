// Google Benchmark of the flow-level network (docs/NETWORK.md, "Speed"). Run: ./build/bench_flow
//   BM_RingAllReduceCold: 256 MB ring all-reduce over N GPUs (N/8 nodes x 8, default H100 cluster on a
//     two-tier fat-tree), from nothing: build the topology, plan the rings, route, simulate.
//   BM_RingAllReduceWarm: the same on a network that has routed it before (what an engine pays per call).
//   BM_AllToAll: all-to-all of 256 MB over N GPUs (N(N-1) uncoupled flows).
#include <benchmark/benchmark.h>

#include <numeric>

#include "stepsim/cost/collective/flow_collectives.hpp"

namespace {

using stepsim::cost::FlowAlgorithm;
using stepsim::cost::FlowNetwork;
using stepsim::workload::CollType;

constexpr uint64_t kBytes = 256ull << 20;

stepsim::spec::ClusterSpec cluster(int gpus) {
  stepsim::spec::ClusterSpec c;
  c.num_gpus = gpus;
  return c;
}

int64_t run(FlowNetwork& net, CollType coll, const std::vector<int>& ranks) {
  net.reset();
  net.start(0, stepsim::cost::collective_phases(net.router(), coll, kBytes, ranks, FlowAlgorithm::Ring), 1);
  std::vector<uint64_t> done;
  while (done.empty()) net.advance(net.next_completion_ns(), done);
  return net.now_ns();
}

std::vector<int> all_ranks(int n) {
  std::vector<int> r(n);
  std::iota(r.begin(), r.end(), 0);
  return r;
}

void BM_RingAllReduceCold(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  int64_t ns = 0;
  size_t flows = 0;
  for (auto _ : state) {
    const stepsim::hw::Topology t = stepsim::hw::build_topology(cluster(gpus));
    FlowNetwork net(t);
    const auto phases = stepsim::cost::collective_phases(net.router(), CollType::AllReduce, kBytes, all_ranks(gpus),
                                                         FlowAlgorithm::Ring);
    flows = 0;
    for (const auto& p : phases) flows += p.flows.size();
    net.start(0, phases, 1);
    std::vector<uint64_t> done;
    while (done.empty()) net.advance(net.next_completion_ns(), done);
    ns = net.now_ns();
  }
  state.counters["simulated_ms"] = static_cast<double>(ns) * 1e-6;
  state.counters["flows"] = static_cast<double>(flows);
}
BENCHMARK(BM_RingAllReduceCold)->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_RingAllReduceWarm(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const stepsim::hw::Topology t = stepsim::hw::build_topology(cluster(gpus));
  FlowNetwork net(t);
  const std::vector<int> ranks = all_ranks(gpus);
  run(net, CollType::AllReduce, ranks);
  int64_t ns = 0;
  for (auto _ : state) ns = run(net, CollType::AllReduce, ranks);
  state.counters["simulated_ms"] = static_cast<double>(ns) * 1e-6;
}
BENCHMARK(BM_RingAllReduceWarm)->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_AllToAll(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const stepsim::hw::Topology t = stepsim::hw::build_topology(cluster(gpus));
  FlowNetwork net(t);
  const std::vector<int> ranks = all_ranks(gpus);
  int64_t ns = 0;
  for (auto _ : state) ns = run(net, CollType::AllToAll, ranks);
  state.counters["simulated_ms"] = static_cast<double>(ns) * 1e-6;
  state.counters["flows"] = static_cast<double>(gpus) * (gpus - 1);
}
BENCHMARK(BM_AllToAll)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
