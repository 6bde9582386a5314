#pragma once
// Li's operator model as TrioSim uses it (§4.4): per op type, t = a * FLOPs + b * bytes + c with a, b, c >= 0,
// fitted by least squares on the trace's own ops, with its fit error (R², MAPE). A type with fewer than 3
// distinct (FLOPs, bytes) points cannot determine the line and scales proportionally instead.
#include <map>
#include <string>
#include <vector>

namespace stepsim::extrapolate {

struct OpSample {
  std::string type;   // execution-trace op name, e.g. aten::addmm
  double flops = 0;
  double bytes = 0;
  double ns = 0;      // measured: the sum of the op's kernels
};

struct TypeFit {
  std::string type;
  int n = 0;                  // samples
  int distinct = 0;           // distinct (FLOPs, bytes) points
  bool linear = false;        // false: proportional scaling (too few distinct points)
  double ns_per_flop = 0;     // a
  double ns_per_byte = 0;     // b
  double fixed_ns = 0;        // c
  double r2 = 0;              // 1 - SS_res / SS_tot over the samples (1 when they are all equal and fitted exactly)
  double mape = 0;            // mean |predicted - measured| / measured, as a fraction
};

class OpRegression {
 public:
  static OpRegression fit(const std::vector<OpSample>& samples);

  const std::vector<TypeFit>& types() const { return types_; }
  const TypeFit* find(const std::string& type) const;
  double predict_ns(const TypeFit& f, double flops, double bytes) const {
    return f.ns_per_flop * flops + f.ns_per_byte * bytes + f.fixed_ns;
  }
  // The factor by which an op of `type` measured at (flops, bytes) changes at (flops2, bytes2): the fitted line's
  // ratio (the op keeps its own residual); proportional to FLOPs (else bytes) for types without a line.
  double scale(const std::string& type, double flops, double bytes, double flops2, double bytes2) const;

 private:
  std::vector<TypeFit> types_;  // by type name
  std::map<std::string, size_t> index_;
};

}  // namespace stepsim::extrapolate
