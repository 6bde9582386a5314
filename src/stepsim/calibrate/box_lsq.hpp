#pragma once
// Box-constrained linear least squares for a handful of unknowns: min ||A x - b||^2 with lo <= x <= hi. The
// problem is kept as its normal equations (A^T A, A^T b, b^T b) so that rows can be added and removed cheaply,
// which is what leave-one-out cross-validation needs.
#include <vector>

namespace stepsim::cost {

class BoxLsq {
 public:
  static constexpr int kMaxUnknowns = 8;
  explicit BoxLsq(int unknowns);

  int unknowns() const { return n_; }
  // Adds (sign +1) or removes (sign -1) the equation a . x = b; `a` has unknowns() entries.
  void add(const double* a, double b, double sign = 1.0);
  // Rows added minus rows removed that have a nonzero entry in column j.
  int nonzeros(int j) const { return nnz_[j]; }

  // The minimiser over the box. Unknowns with active[j] == false stay at x0[j] (a column without data cannot be
  // fitted). hi may be +infinity. Deterministic: every face of the box is tried in a fixed order and the lowest
  // objective wins, so the result is the global optimum of this convex problem.
  std::vector<double> solve(const std::vector<double>& lo, const std::vector<double>& hi,
                            const std::vector<bool>& active, const std::vector<double>& x0) const;
  // ||A x - b||^2 from the normal equations.
  double objective(const std::vector<double>& x) const;

 private:
  int n_;
  std::vector<long double> g_;  // A^T A, row-major n x n (long double: the normal equations square the condition)
  std::vector<long double> h_;  // A^T b
  long double c_ = 0;           // b^T b
  std::vector<int> nnz_;
};

}  // namespace stepsim::cost
