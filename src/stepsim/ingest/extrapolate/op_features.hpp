#pragma once
// FLOPs and bytes of one PyTorch operator from the shapes and element types its execution-trace node records (the
// inputs of Li's per-op-type model, docs/EXTRAPOLATION.md): matmul family (mm, addmm, bmm, matmul, linear) 2*m*k*n
// per batch, convolution 2 * output elements * input channels per group * kernel size, embedding_bag one add per
// looked-up element; every other op is memory-bound and has bytes only. Bytes are the tensors read and written.
#include <cstdint>
#include <string>

#include "stepsim/ingest/trace/execution_trace.hpp"

namespace stepsim::extrapolate {

enum class OpFamily { Matmul, Conv, Embedding, Other };

OpFamily family_of(const std::string& op_name);
// Ops that hold a weight and start a layer when they run in the forward pass (nn.Linear, nn.Conv*, nn.Embedding).
bool is_layer_op(const std::string& op_name);
// Bytes of one element of an execution-trace type ("Tensor(float)" 4, "Tensor(c10::BFloat16)" 2, ...); 0 for
// non-tensors and tensors whose type is unknown or uninitialised.
int64_t element_bytes(const std::string& type);
// Bytes of one value (0 unless a tensor with known dimensions).
double value_bytes(const trace::EtValue& v);

struct OpFeatures {
  double flops = 0;
  double bytes = 0;
  bool known = false;  // the node has tensor shapes to compute from
};

// How the op is resized: `batch_ratio` multiplies the tensors that carry the traced batch (any dimension equal
// to `trace_batch`; <= 0 turns batch scaling off) and FLOPs of ops that read such a tensor; `split` divides FLOPs
// and bytes (a tensor-parallel shard).
struct Resize {
  double batch_ratio = 1.0;
  int64_t trace_batch = 0;
  int split = 1;
};

OpFeatures features_of(const trace::EtNode& node, const Resize& r = {});
// Bytes of the node's first output (or, for `input`, first tensor input), resized like features_of's tensors.
double first_tensor_bytes(const trace::EtNode& node, bool input, const Resize& r = {});

}  // namespace stepsim::extrapolate
