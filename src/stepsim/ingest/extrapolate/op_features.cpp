#include "stepsim/ingest/extrapolate/op_features.hpp"

#include <vector>

namespace stepsim::extrapolate {
namespace {

double numel(const trace::EtValue& v) {
  double n = 1;
  for (int64_t d : v.dims) n *= static_cast<double>(d);
  return n;
}

bool is_tensor(const trace::EtValue& v) { return v.dims_known && element_bytes(v.type) > 0; }

bool carries_batch(const trace::EtValue& v, int64_t batch) {
  if (batch <= 0) return false;
  for (int64_t d : v.dims) {
    if (d == batch) return true;
  }
  return false;
}

std::vector<const trace::EtValue*> tensors(const std::vector<trace::EtValue>& vs) {
  std::vector<const trace::EtValue*> out;
  for (const auto& v : vs) {
    if (is_tensor(v)) out.push_back(&v);
  }
  return out;
}

// 2*m*k*n (times the batch of bmm / matmul on 3-d operands) from the operands' dimensions.
double matmul_flops(const std::string& name, const std::vector<const trace::EtValue*>& in) {
  auto dims = [&](size_t i) -> const std::vector<int64_t>& { return in[i]->dims; };
  if (name == "aten::addmm" || name == "aten::baddbmm") {
    if (in.size() < 3) return 0;
    std::vector<const trace::EtValue*> rest(in.begin() + 1, in.end());
    return matmul_flops(name == "aten::addmm" ? "aten::mm" : "aten::bmm", rest);
  }
  if (in.size() < 2) return 0;
  const auto &a = dims(0), &b = dims(1);
  if (name == "aten::linear") {  // input [..., k], weight [n, k]
    if (a.empty() || b.size() != 2) return 0;
    return 2.0 * numel(*in[0]) * static_cast<double>(b[0]);
  }
  if (a.size() == 2 && b.size() == 2) return 2.0 * a[0] * a[1] * b[1];
  if (a.size() == 3 && b.size() == 3) return 2.0 * a[0] * a[1] * a[2] * b[2];
  if (a.size() >= 2 && b.size() == 2) return 2.0 * numel(*in[0]) * b[1];  // matmul of a batch by a matrix
  return 0;
}

double conv_flops(const std::vector<const trace::EtValue*>& in, const std::vector<const trace::EtValue*>& out) {
  if (in.size() < 2 || out.empty()) return 0;
  const auto& w = in[1]->dims;  // [out channels, in channels / groups, kernel...]
  if (w.size() < 3) return 0;
  double per_output = 1;
  for (size_t i = 1; i < w.size(); ++i) per_output *= static_cast<double>(w[i]);
  return 2.0 * numel(*out[0]) * per_output;
}

}  // namespace

OpFamily family_of(const std::string& n) {
  if (n == "aten::mm" || n == "aten::addmm" || n == "aten::bmm" || n == "aten::baddbmm" || n == "aten::matmul" ||
      n == "aten::linear")
    return OpFamily::Matmul;
  if (n == "aten::convolution" || n == "aten::_convolution" || n == "aten::cudnn_convolution" ||
      n.starts_with("aten::conv") || n == "aten::convolution_backward")
    return OpFamily::Conv;
  if (n == "aten::embedding" || n == "aten::embedding_bag" || n == "aten::_embedding_bag" ||
      n == "aten::embedding_dense_backward" || n == "aten::_embedding_bag_backward")
    return OpFamily::Embedding;
  return OpFamily::Other;
}

bool is_layer_op(const std::string& n) {
  return n == "aten::linear" || n == "aten::addmm" || n == "aten::mm" || n == "aten::matmul" ||
         (family_of(n) == OpFamily::Conv && n != "aten::convolution_backward") || n == "aten::embedding" ||
         n == "aten::embedding_bag" || n == "aten::_embedding_bag";
}

int64_t element_bytes(const std::string& t) {
  if (!t.starts_with("Tensor(")) return 0;
  const std::string e = t.substr(7, t.size() > 8 ? t.size() - 8 : 0);
  if (e == "float" || e == "int" || e == "unsigned int" || e == "c10::complex<c10::Half>") return 4;
  if (e == "double" || e == "long int" || e == "long" || e == "c10::complex<float>" || e == "unsigned long") return 8;
  if (e == "c10::Half" || e == "c10::BFloat16" || e == "short" || e == "short int" || e == "unsigned short") return 2;
  if (e == "bool" || e == "unsigned char" || e == "signed char" || e == "char" || e.starts_with("c10::Float8")) return 1;
  if (e == "c10::complex<double>") return 16;
  return 0;  // nullptr (uninitialized), unknown
}

double value_bytes(const trace::EtValue& v) {
  return is_tensor(v) ? numel(v) * static_cast<double>(element_bytes(v.type)) : 0.0;
}

OpFeatures features_of(const trace::EtNode& node, const Resize& r) {
  OpFeatures f;
  const auto in = tensors(node.inputs), out = tensors(node.outputs);
  if (in.empty() && out.empty()) return f;
  f.known = true;
  bool batched = false;
  auto add = [&](const std::vector<const trace::EtValue*>& vs) {
    for (const trace::EtValue* v : vs) {
      const bool b = carries_batch(*v, r.trace_batch);
      batched = batched || b;
      f.bytes += value_bytes(*v) * (b ? r.batch_ratio : 1.0);
    }
  };
  add(in);
  add(out);
  switch (family_of(node.name)) {
    case OpFamily::Matmul: f.flops = matmul_flops(node.name, in); break;
    case OpFamily::Conv: f.flops = conv_flops(in, out); break;
    case OpFamily::Embedding:
      // embedding_bag(weight [V, D], indices [n], offsets): one add per looked-up element; embedding copies only.
      if (node.name != "aten::embedding" && in.size() >= 2 && in[0]->dims.size() == 2)
        f.flops = numel(*in[1]) * static_cast<double>(in[0]->dims[1]);
      break;
    case OpFamily::Other: break;
  }
  if (batched) f.flops *= r.batch_ratio;
  f.flops /= r.split;
  f.bytes /= r.split;
  return f;
}

double first_tensor_bytes(const trace::EtNode& node, bool input, const Resize& r) {
  for (const trace::EtValue* v : tensors(input ? node.inputs : node.outputs)) {
    return value_bytes(*v) * (carries_batch(*v, r.trace_batch) ? r.batch_ratio : 1.0);
  }
  return 0;
}

}  // namespace stepsim::extrapolate
