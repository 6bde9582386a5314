// libFuzzer target for the execution-trace reader and the kernel-to-node linker (fed a fixed small Kineto trace).
// Bad input must end in InputError; any other exception, crash, hang or broken invariant below is a bug.
#include <cstdint>
#include <cstring>
#include <string>

#include "stepsim/io/input_error.hpp"
#include "stepsim/ingest/trace/execution_trace.hpp"

#include "fuzz_support.hpp"

using fuzz_support::require;
using namespace stepsim::trace;

namespace {

const KinetoTrace& kineto() {
  static const KinetoTrace k = [] {
    const char* text =
        R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":10,"dur":5,"args":{"External id":3}},)"
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":11,"dur":1,"args":{"correlation":7}},)"
        R"({"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":20,"dur":2,"args":{"stream":7,"correlation":7}}]})";
    return parse_kineto_trace(TextBuffer::copy_of(text, std::strlen(text)), "fixed.json");
  }();
  return k;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const TextBuffer text = TextBuffer::copy_of(reinterpret_cast<const char*>(data), size);
  ExecutionTrace et;
  try {
    et = parse_execution_trace(text, "fuzz.json");
  } catch (const stepsim::InputError&) {
    return 0;
  }
  for (const EtNode& n : et.nodes) require(n.id >= 0);
  const auto link = link_kernels_to_nodes(kineto(), et);
  require(link.size() == kineto().kernels.size());
  for (int n : link) require(n >= -1 && n < static_cast<int>(et.nodes.size()));
  return 0;
}
