#pragma once
// Internal to src/stepsim/ingest/trace/: the per-format readers trace_document.cpp feeds with root-object fields.
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stepsim/ingest/trace/execution_trace.hpp"
#include "stepsim/ingest/trace/json_read.hpp"
#include "stepsim/ingest/trace/kineto_trace.hpp"

namespace stepsim::trace {

class KinetoReader {
 public:
  explicit KinetoReader(const std::string& name);
  // Consumes a root field it knows ("traceEvents", "distributedInfo"); false when the key is not its own.
  bool field(std::string_view key, json::od::value v);
  bool saw_events() const { return saw_events_; }
  // Reserves the event lists for the kernels, CPU ops and runtime calls the text names (a count of the category
  // tokens), so that they do not grow by doubling: at the event limit a doubling copy would hold both lists at once.
  // With op_bytes > 0 (trace import: an op's floor in the rank file), refuses first a trace whose kernels cannot fit
  // a rank file (check_kernel_events_fit).
  void expect_events(const TextBuffer& text, uintmax_t op_bytes = 0);
  KinetoTrace finish();  // links kernels to CPU ops and steps

  struct Runtime {
    int64_t correlation, pid, tid, ts_ns;
  };

 private:
  void event(json::od::object e);
  uint32_t intern(std::string_view s);

  KinetoTrace t_;
  std::vector<Runtime> runtimes_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  bool saw_events_ = false;
};

class EtReader {
 public:
  explicit EtReader(const std::string& name);
  bool field(std::string_view key, json::od::value v);
  bool saw_nodes() const { return saw_nodes_; }
  ExecutionTrace finish() { return std::move(et_); }

 private:
  ExecutionTrace et_;
  bool saw_nodes_ = false;
};

}  // namespace stepsim::trace
