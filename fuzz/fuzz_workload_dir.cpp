// libFuzzer target for trace-driven simulation's input: one rank's workload file (stepsim-trace-program or the
// ex-situ tracer's stepsim.workload), then the workload built from it for a 2-GPU data-parallel job (the rank
// reused by its peer) and the engine run over it. Bad input must end in InputError before the engine, or in the
// engine's DeadlockError for a call order that cannot complete; a crash, hang or other exception is a bug.
#include <cstdint>
#include <string>

#include "stepsim/sim/engine.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/ingest/trace/trace_workload.hpp"
#include "stepsim/ingest/trace/workload_dir.hpp"

#include "fuzz_support.hpp"
#include "stepsim/catalog/catalog.hpp"

using fuzz_support::require;
using namespace stepsim;

namespace {

const spec::JobSpec& job() {
  static const spec::JobSpec j = [] {
    const std::string yaml =
        "model: {name: tiny, num_layers: 2, hidden_size: 64, num_attention_heads: 4, ffn_hidden_size: 256,"
        " vocab_size: 128, seq_length: 16}\n"
        "parallelism: {tensor: 1, pipeline: 1, data: 2}\n"
        "training: {micro_batch_size: 1, global_batch_size: 2}\n"
        "cluster: {gpu: H100-SXM, num_gpus: 2, gpus_per_node: 8}\n";
    return spec::job_from_node(stepsim::catalog::shipped().gpus, spec::parse_yaml(yaml, "fuzz.yaml"), "fuzz.yaml");
  }();
  return j;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 16)) return 0;  // the engine's time grows with the ops; keep runs short
  const std::string text(reinterpret_cast<const char*>(data), size);
  trace::TraceWorkload tw;
  try {
    std::vector<trace::TracedRank> ranks;
    ranks.push_back(trace::parse_traced_rank(text, "rank0.json", {}));
    if (ranks.back().comm_only) return 0;
    ranks.back().rank = 0;  // the file's rank is checked against its name by read_workload_dir, not here
    if (ranks.back().world_size != -1 && ranks.back().world_size != 2) return 0;
    tw = trace::build_trace_workload(job(), std::move(ranks));
  } catch (const InputError&) {
    return 0;
  }
  require(tw.source_of_rank.size() == 2);
  try {
    const sim::Simulation s = sim::run_workload(stepsim::catalog::shipped(), std::move(tw.workload), {0});
    require(s.result.step_ns >= 0);
  } catch (const sim::DeadlockError&) {
    // A call order no run could complete (both peers receive first): `simulate` reports it as bad input.
  }
  return 0;
}
