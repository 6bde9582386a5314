// Face enumeration: the optimum of a convex quadratic over a box is the unconstrained optimum of the quadratic
// restricted to one face (each unknown free, at its lower or at its upper bound). With <= 8 unknowns there are at
// most 3^8 faces, each a small Cholesky solve, which is simpler to get right than an active-set method and exact.
#include "stepsim/calibrate/box_lsq.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace stepsim::cost {

BoxLsq::BoxLsq(int unknowns)
    : n_(unknowns), g_(static_cast<size_t>(unknowns * unknowns), 0), h_(static_cast<size_t>(unknowns), 0),
      nnz_(static_cast<size_t>(unknowns), 0) {
  if (unknowns < 1 || unknowns > kMaxUnknowns) throw std::invalid_argument("BoxLsq: 1..8 unknowns");
}

void BoxLsq::add(const double* a, double b, double sign) {
  const long double s = sign;
  for (int i = 0; i < n_; ++i) {
    if (a[i] == 0) continue;
    nnz_[i] += sign > 0 ? 1 : -1;
    for (int j = 0; j < n_; ++j) g_[i * n_ + j] += s * static_cast<long double>(a[i]) * a[j];
    h_[i] += s * static_cast<long double>(a[i]) * b;
  }
  c_ += s * static_cast<long double>(b) * b;
}

double BoxLsq::objective(const std::vector<double>& x) const {
  long double f = c_;
  for (int i = 0; i < n_; ++i) {
    long double gx = 0;
    for (int j = 0; j < n_; ++j) gx += g_[i * n_ + j] * x[j];
    f += x[i] * gx - 2 * h_[i] * x[i];
  }
  return static_cast<double>(f);
}

namespace {

// Solves M z = r in place (M symmetric, k x k, row-major) by Cholesky; false when M is not safely positive
// definite (dependent columns on this face: a neighbouring face with one more bound holds an optimum too).
bool cholesky_solve(std::vector<long double>& M, std::vector<long double>& r, int k) {
  for (int j = 0; j < k; ++j) {
    long double d = M[j * k + j];
    for (int p = 0; p < j; ++p) d -= M[j * k + p] * M[j * k + p];
    if (!(d > 1e-12L)) return false;  // the columns are scaled to unit norm, so d is a relative measure
    const long double l = std::sqrt(d);
    M[j * k + j] = l;
    for (int i = j + 1; i < k; ++i) {
      long double v = M[i * k + j];
      for (int p = 0; p < j; ++p) v -= M[i * k + p] * M[j * k + p];
      M[i * k + j] = v / l;
    }
  }
  for (int i = 0; i < k; ++i) {
    for (int p = 0; p < i; ++p) r[i] -= M[i * k + p] * r[p];
    r[i] /= M[i * k + i];
  }
  for (int i = k - 1; i >= 0; --i) {
    for (int p = i + 1; p < k; ++p) r[i] -= M[p * k + i] * r[p];
    r[i] /= M[i * k + i];
  }
  return true;
}

}  // namespace

std::vector<double> BoxLsq::solve(const std::vector<double>& lo, const std::vector<double>& hi,
                                  const std::vector<bool>& active, const std::vector<double>& x0) const {
  std::vector<int> vars;  // unknowns the faces vary
  for (int j = 0; j < n_; ++j) {
    if (active[j] && g_[j * n_ + j] > 0) vars.push_back(j);
  }
  std::vector<double> base = x0;
  for (int j = 0; j < n_; ++j) {
    // An active unknown whose column is empty cannot move the objective: its start value, kept in the box.
    if (active[j]) base[j] = std::min(std::max(x0[j], lo[j]), hi[j]);
  }
  std::vector<long double> scale(static_cast<size_t>(n_), 1);
  for (int j : vars) scale[j] = 1 / std::sqrt(g_[j * n_ + j]);

  std::vector<double> best = base;
  double best_f = std::numeric_limits<double>::infinity();
  const size_t nv = vars.size();
  std::vector<int> state(nv, 0);  // 0 free, 1 at lo, 2 at hi
  std::vector<double> x(static_cast<size_t>(n_));
  std::vector<int> freev;
  std::vector<long double> M, r;
  while (true) {
    bool valid = true;
    x = base;
    freev.clear();
    for (size_t v = 0; v < nv; ++v) {
      const int j = vars[v];
      if (state[v] == 0) freev.push_back(j);
      else if (state[v] == 1) x[j] = lo[j];
      else if (std::isfinite(hi[j])) x[j] = hi[j];
      else valid = false;
    }
    if (valid && !freev.empty()) {
      const int k = static_cast<int>(freev.size());
      M.assign(static_cast<size_t>(k * k), 0);
      r.assign(static_cast<size_t>(k), 0);
      for (int a = 0; a < k; ++a) {
        const int i = freev[a];
        long double rhs = h_[i];
        for (int j = 0; j < n_; ++j) {
          if (std::find(freev.begin(), freev.end(), j) == freev.end()) rhs -= g_[i * n_ + j] * x[j];
        }
        r[a] = rhs * scale[i];
        for (int b = 0; b < k; ++b) M[a * k + b] = g_[i * n_ + freev[b]] * scale[i] * scale[freev[b]];
      }
      valid = cholesky_solve(M, r, k);
      for (int a = 0; valid && a < k; ++a) {
        const int j = freev[a];
        const double z = static_cast<double>(r[a] * scale[j]);
        const double tol = 1e-12 * (1 + std::fabs(lo[j]) + (std::isfinite(hi[j]) ? std::fabs(hi[j]) : 0));
        if (!std::isfinite(z) || z < lo[j] - tol || z > hi[j] + tol) valid = false;
        else x[j] = std::min(std::max(z, lo[j]), hi[j]);
      }
    }
    if (valid) {
      const double f = objective(x);
      if (f < best_f) {
        best_f = f;
        best = x;
      }
    }
    size_t v = 0;  // next face (mixed-radix counter)
    while (v < nv && ++state[v] == 3) state[v++] = 0;
    if (v == nv) break;
  }
  return best;
}

}  // namespace stepsim::cost
