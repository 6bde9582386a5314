// libFuzzer target for the Kineto (PyTorch profiler) trace reader and the program built from it. Bad input must
// end in InputError; any other exception, crash, hang or broken invariant below is a bug.
#include <cstdint>
#include <string>

#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/kineto_trace.hpp"
#include "stepsim/ingest/trace/trace_program.hpp"

#include "fuzz_support.hpp"

using fuzz_support::require;
using namespace stepsim::trace;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const TextBuffer text = TextBuffer::copy_of(reinterpret_cast<const char*>(data), size);
  KinetoTrace k;
  try {
    k = parse_kineto_trace(text, "fuzz.json");
  } catch (const stepsim::InputError&) {
    return 0;
  }
  for (size_t i = 0; i < k.kernels.size(); ++i) {
    const Kernel& kn = k.kernels[i];
    require(kn.dur_ns >= 0 && kn.name < k.names.size());
    require(kn.cpu_op >= -1 && kn.cpu_op < static_cast<int>(k.cpu_ops.size()));
    require(kn.comm_op >= -1 && kn.comm_op < static_cast<int>(k.cpu_ops.size()));
    require(kn.meta >= -1 && kn.meta < static_cast<int>(k.metas.size()));
    if (i) require(k.kernels[i - 1].start_ns <= kn.start_ns);
  }
  const RankImport r = build_rank_import(k, nullptr, 0);
  require(r.kernels == static_cast<int64_t>(k.kernels.size()) && r.nccl_kernels <= r.kernels);
  require(r.ops.size() == r.program.ops.size() && r.compute_busy_s >= 0);
  for (const ImportedOp& op : r.ops) require(op.name < r.names.size() && op.duration_ns >= 0);
  return 0;
}
