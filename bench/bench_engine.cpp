// Google Benchmark of the engine alone (workload built once): events/s on GPT-3 175B with
// TP 8, PP 8 and growing data parallelism. Run: ./build/bench_engine
#include <benchmark/benchmark.h>

#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/workload/megatron_builder.hpp"

namespace {

void BM_EngineGpt3(benchmark::State& state) {
  const int dp = static_cast<int>(state.range(0));
  stepsim::spec::JobSpec job = stepsim::spec::load_job_file(stepsim::catalog::shipped().gpus, 
      STEPSIM_SOURCE_DIR "/bench/gpt3-175b-8192.yaml",
      {"cluster.num_gpus=" + std::to_string(64 * dp), "parallelism.data=" + std::to_string(dp),
       "training.global_batch_size=" + std::to_string(12 * dp)});
  stepsim::workload::Workload w = stepsim::workload::build_megatron_workload(job);
  const auto compute = stepsim::cost::make_roofline_model(stepsim::catalog::shipped().gpus.find(job.cluster.gpu),
                                                          job.training.precision, stepsim::catalog::shipped().efficiency.resolve(stepsim::catalog::shipped().gpus.find(job.cluster.gpu)));
  stepsim::sim::assign_compute_durations(w, *compute);
  const auto comm = stepsim::cost::make_alpha_beta_model(job.cluster);
  uint64_t events = 0;
  for (auto _ : state) {
    const auto r = stepsim::sim::simulate(w, *comm, {});
    events = r.events;
    benchmark::DoNotOptimize(r.step_ns);
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events) * state.iterations(),
                                                      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EngineGpt3)->Arg(2)->Arg(16)->Arg(128)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
