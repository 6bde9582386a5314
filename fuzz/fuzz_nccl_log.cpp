// libFuzzer target for the NCCL debug-log parser (and the kernel-name parser on the same bytes). The one InputError
// expected for in-memory text under the size limit is a text without a single NCCL line; any other exception, crash
// or hang, or a record that breaks the invariants below, is a bug.
#include <cstdint>
#include <string>

#include "stepsim/ingest/profile/nccl_kernel_name.hpp"
#include "stepsim/ingest/profile/nccl_log.hpp"
#include "stepsim/io/input_error.hpp"

#include "fuzz_support.hpp"

using fuzz_support::require;
using namespace stepsim::profile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  int64_t lines = 0;
  for (char c : text) lines += c == '\n';
  lines += !text.empty() && text.back() != '\n';
  const size_t nl = text.find('\n');
  if (auto k = parse_nccl_kernel_name(text.substr(0, nl))) require(k->datatype >= -1 && k->datatype < 12);
  NcclLog log;
  try {
    parse_nccl_log_text(text, "fuzz.log", log);
  } catch (const stepsim::InputError& e) {
    require(std::string(e.what()).rfind("fuzz.log: no NCCL log line", 0) == 0 && log.nccl_lines == 0);
    return 0;
  }
  require(log.nccl_lines > 0);
  require(log.lines == lines);
  require(log.garbled_lines >= 0 && log.garbled_examples.size() <= 8);
  require(log.nccl_lines <= log.lines);
  int prev = 0;
  for (const auto& c : log.calls) {
    require(c.at.line >= 1 && c.at.line <= lines && c.at.line > prev);
    prev = c.at.line;
    require(c.count >= 0 && c.op != NcclOp::Unknown && c.bytes() >= 0);
    require(c.algorithm.empty() == c.protocol.empty());
  }
  for (const auto& i : log.inits) require(i.rank >= 0 && i.rank < i.nranks);
  for (const auto& t : log.topologies) {
    for (const auto& l : t.links) {
      require(l.from >= 0 && l.to >= 0 && l.from < static_cast<int>(t.nodes.size()) &&
              l.to < static_cast<int>(t.nodes.size()));
      require(l.bw_GBps >= 0);
    }
    if (t.nodes.size() >= 2) (void)t.gpu_pair_bottleneck(t.nodes[0].id, t.nodes[1].id);
  }
  return 0;
}
