#include "stepsim/ingest/extrapolate/op_regression.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "stepsim/calibrate/box_lsq.hpp"

namespace stepsim::extrapolate {
namespace {

TypeFit fit_type(const std::string& type, const std::vector<const OpSample*>& s) {
  TypeFit f;
  f.type = type;
  f.n = static_cast<int>(s.size());
  std::set<std::pair<double, double>> points;
  for (const OpSample* x : s) points.emplace(x->flops, x->bytes);
  f.distinct = static_cast<int>(points.size());
  if (f.distinct < 3) return f;
  f.linear = true;
  // Columns scaled to at most 1 so that FLOPs (up to 1e12) and bytes do not swamp the normal equations.
  double sf = 0, sb = 0;
  for (const OpSample* x : s) sf = std::max(sf, x->flops), sb = std::max(sb, x->bytes);
  sf = sf > 0 ? sf : 1;
  sb = sb > 0 ? sb : 1;
  cost::BoxLsq lsq(3);
  for (const OpSample* x : s) {
    const double a[3] = {x->flops / sf, x->bytes / sb, 1.0};
    lsq.add(a, x->ns);
  }
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x = lsq.solve({0, 0, 0}, {inf, inf, inf}, {true, true, true}, {0, 0, 0});
  f.ns_per_flop = x[0] / sf;
  f.ns_per_byte = x[1] / sb;
  f.fixed_ns = x[2];
  double mean = 0;
  for (const OpSample* p : s) mean += p->ns;
  mean /= static_cast<double>(s.size());
  double ss_res = 0, ss_tot = 0, ape = 0;
  int with_time = 0;
  for (const OpSample* p : s) {
    const double pred = f.ns_per_flop * p->flops + f.ns_per_byte * p->bytes + f.fixed_ns;
    ss_res += (pred - p->ns) * (pred - p->ns);
    ss_tot += (p->ns - mean) * (p->ns - mean);
    if (p->ns > 0) ape += std::abs(pred - p->ns) / p->ns, ++with_time;
  }
  // Relative to the times' scale, so that rounding in the solve does not show as a misfit.
  const double tiny = 1e-18 * std::max(1.0, mean * mean) * static_cast<double>(s.size());
  f.r2 = ss_tot > tiny ? 1.0 - ss_res / ss_tot : (ss_res <= tiny ? 1.0 : 0.0);
  f.mape = with_time ? ape / with_time : 0.0;
  return f;
}

}  // namespace

OpRegression OpRegression::fit(const std::vector<OpSample>& samples) {
  std::map<std::string, std::vector<const OpSample*>> by_type;
  for (const OpSample& s : samples) by_type[s.type].push_back(&s);
  OpRegression r;
  for (const auto& [type, s] : by_type) {
    r.index_[type] = r.types_.size();
    r.types_.push_back(fit_type(type, s));
  }
  return r;
}

const TypeFit* OpRegression::find(const std::string& type) const {
  const auto it = index_.find(type);
  return it == index_.end() ? nullptr : &types_[it->second];
}

double OpRegression::scale(const std::string& type, double flops, double bytes, double flops2, double bytes2) const {
  if (flops == flops2 && bytes == bytes2) return 1.0;
  const TypeFit* f = find(type);
  if (f && f->linear) {
    const double before = predict_ns(*f, flops, bytes);
    if (before > 0) return predict_ns(*f, flops2, bytes2) / before;
  }
  if (flops > 0) return flops2 / flops;
  if (bytes > 0) return bytes2 / bytes;
  return 1.0;
}

}  // namespace stepsim::extrapolate
