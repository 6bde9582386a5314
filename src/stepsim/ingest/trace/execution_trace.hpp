#pragma once
// A PyTorch execution trace (execution-graph observer JSON, schemas 1.0.1 flat and 1.0.2+/1.1.0 "chakra" with
// attrs): the nodes, their record-function ids (rf_id; equal to the Kineto CPU op's "Record function id" where the
// Kineto trace has one) and the collective each record_param_comms node describes.
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/ingest/trace/kineto_trace.hpp"
#include "stepsim/ingest/trace/text_buffer.hpp"

namespace stepsim::trace {

// One input or output of a node as the trace records it: the element type ("Tensor(float)", "Int", ...) and, for
// a tensor, its dimensions (empty for a 0-d tensor; `dims_known` false where the shape is not a list of integers).
struct EtValue {
  std::string type;
  std::vector<int64_t> dims;
  bool dims_known = false;
};

struct EtNode {
  int64_t id = -1;
  int64_t rf_id = -1;
  int64_t parent = -1;     // "parent" (1.0.1) or "ctrl_deps" (chakra schemas)
  std::string name;
  std::string collective;  // record_param_comms: attrs collective_name, else its first string input
  int64_t seq_id = -1;     // autograd sequence number: a forward op and its *Backward node share it
  std::vector<EtValue> inputs, outputs;  // shapes and types (input_shapes/input_types, or inputs.shapes/types)
};

struct ExecutionTrace {
  std::string path;
  std::string schema;
  int64_t pid = -1;
  std::vector<EtNode> nodes;  // in file order
};

ExecutionTrace parse_execution_trace(const TextBuffer& text, const std::string& name);
ExecutionTrace read_execution_trace(const std::string& path);

// Links every kernel of `k` to the node of its launching CPU op; the
// result is one node index per kernel (-1 = unlinked). Kineto traces that carry "Record function id" are matched
// on it exactly; others by aligning op names in External id order with node names in rf_id order.
std::vector<int> link_kernels_to_nodes(const KinetoTrace& k, const ExecutionTrace& et);

}  // namespace stepsim::trace
