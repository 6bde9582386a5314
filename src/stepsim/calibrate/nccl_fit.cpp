#include "stepsim/calibrate/nccl_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "stepsim/calibrate/box_lsq.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {
namespace {

using workload::CollType;

constexpr int kP = kNcclParamCount;
// theta bounds (times in us; 1/efficiency; 1/reduce_GBps).
const std::vector<double> kLo = {0, 0, 0, 1 / 1.5, 1 / 1.5, 1e-6};
const std::vector<double> kHi = {1e6, 1e6, 1e6, 1 / 0.05, 1 / 0.05, 1e3};

constexpr size_t kMaxLeaveOneOut = 2000;  // above: 10-fold cross-validation (each refit is a pass over the data)

bool p2p_like(BenchCollective c) {
  return c == BenchCollective::AllToAll || c == BenchCollective::SendRecv || c == BenchCollective::Gather ||
         c == BenchCollective::Scatter;
}

double predict(const NcclTerms& t, const std::array<double, kP>& theta) {
  double us = 0;
  for (int i = 0; i < kP; ++i) us += t.x[i] * theta[i];
  return us;
}

double error_pct(double predicted, double measured) { return (predicted - measured) / measured * 100; }

ErrorStats stats(const std::vector<double>& pct) {
  ErrorStats s;
  for (double e : pct) {
    s.mean_abs_pct += std::fabs(e);
    s.max_abs_pct = std::max(s.max_abs_pct, std::fabs(e));
  }
  if (!pct.empty()) s.mean_abs_pct /= static_cast<double>(pct.size());
  return s;
}

// Each measurement is the equation (x / t) . theta = 1: relative error.
void add_point(BoxLsq& lsq, const NcclTerms& terms, double t, double sign) {
  std::array<double, kP> a{};
  for (int i = 0; i < kP; ++i) a[i] = terms.x[i] / t;
  lsq.add(a.data(), 1.0, sign);
}

std::array<double, kP> solve(const BoxLsq& lsq, const NcclParams& base) {
  const auto th0 = theta_of(base);
  std::vector<double> x0(th0.begin(), th0.end());
  std::vector<bool> active(kP);
  for (int j = 0; j < kP; ++j) active[j] = lsq.nonzeros(j) > 0;
  const std::vector<double> x = lsq.solve(kLo, kHi, active, x0);
  std::array<double, kP> th{};
  std::copy(x.begin(), x.end(), th.begin());
  return th;
}

NcclFit fit_subset(const std::vector<PointResult>& pts, const std::vector<size_t>& idx, const NcclParams& base) {
  std::vector<NcclTerms> terms;
  std::vector<double> times;
  for (size_t i : idx) {
    terms.push_back(pts[i].terms);
    times.push_back(pts[i].point.time_us);
  }
  return fit_nccl_params(terms, times, base);
}

// Points whose terms exercise more parameters than there are points cannot pin them down.
int exercised(const std::vector<PointResult>& pts, const std::vector<size_t>& idx) {
  int n = 0;
  for (int j = 0; j < kP; ++j) {
    n += std::any_of(idx.begin(), idx.end(), [&](size_t i) { return pts[i].terms.x[j] != 0; }) ? 1 : 0;
  }
  return n;
}

NcclCalibration calibrate_group(int nodes, std::vector<PointResult> pts, const NcclParamTable& current) {
  NcclCalibration c;
  c.nodes = nodes;
  c.base = current.lookup(nodes, 0);
  for (auto& p : pts) p.before_us = time_us(p.terms, current.lookup(nodes, p.terms.chunk_bytes));

  std::vector<size_t> all(pts.size());
  for (size_t i = 0; i < pts.size(); ++i) all[i] = i;
  c.joint = fit_subset(pts, all, c.base);
  const auto theta = theta_of(c.joint.params);

  // Cross-validation: remove a fold's equations from the normal equations, refit, predict the fold.
  BoxLsq full(kP);
  for (const auto& p : pts) add_point(full, p.terms, p.point.time_us, 1);
  const size_t folds = pts.size() <= kMaxLeaveOneOut ? pts.size() : 10;
  c.cv_kind = pts.size() <= kMaxLeaveOneOut ? "leave-one-out" : "10-fold";
  for (size_t f = 0; f < folds; ++f) {
    BoxLsq rest = full;
    for (size_t i = f; i < pts.size(); i += folds) add_point(rest, pts[i].terms, pts[i].point.time_us, -1);
    const auto th = solve(rest, c.base);
    for (size_t i = f; i < pts.size(); i += folds) pts[i].cv_us = predict(pts[i].terms, th);
  }

  std::vector<double> before, after, cv;
  for (auto& p : pts) {
    p.after_us = predict(p.terms, theta);
    before.push_back(error_pct(p.before_us, p.point.time_us));
    after.push_back(error_pct(p.after_us, p.point.time_us));
    cv.push_back(error_pct(p.cv_us, p.point.time_us));
  }
  c.before = stats(before);
  c.after = stats(after);
  c.cv = stats(cv);

  std::map<uint64_t, std::vector<size_t>> chunks;
  std::map<BenchCollective, std::vector<size_t>> colls;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].terms.chunk_bytes > 0) chunks[pts[i].terms.chunk_bytes].push_back(i);
    colls[pts[i].point.collective].push_back(i);
  }
  for (const auto& [chunk, idx] : chunks) {
    if (idx.size() == pts.size() || static_cast<int>(idx.size()) <= exercised(pts, idx)) continue;
    c.by_chunk.emplace_back(chunk, fit_subset(pts, idx, c.base));
  }
  if (colls.size() > 1) {
    for (const auto& [coll, idx] : colls) {
      if (static_cast<int>(idx.size()) <= exercised(pts, idx)) continue;
      c.by_collective.emplace_back(coll, fit_subset(pts, idx, c.base));
    }
  }
  c.points = std::move(pts);
  return c;
}

}  // namespace

int NcclFit::fitted_count() const { return static_cast<int>(std::count(fitted.begin(), fitted.end(), true)); }

NcclTerms comm_point_terms(const NcclHardware& hw, const CommPoint& p, Algorithm force,
                           std::optional<Protocol> proto) {
  const Algorithm algo = p.algorithm != Algorithm::Auto ? p.algorithm : p2p_like(p.collective) ? Algorithm::Auto : force;
  // Send/recv and the grouped send/recv collectives are timed with Simple: a forced protocol applies to the rest.
  if (p2p_like(p.collective)) proto.reset();
  try {
    switch (p.collective) {
      case BenchCollective::SendRecv: return nccl_p2p_terms(hw, p.bytes, normalized(p.geometry).nodes == 1);
      case BenchCollective::AllReduce: return nccl_terms(hw, CollType::AllReduce, p.bytes, p.geometry, algo, proto);
      case BenchCollective::AllGather: return nccl_terms(hw, CollType::AllGather, p.bytes, p.geometry, algo, proto);
      case BenchCollective::ReduceScatter:
        return nccl_terms(hw, CollType::ReduceScatter, p.bytes, p.geometry, algo, proto);
      case BenchCollective::Broadcast: return nccl_terms(hw, CollType::Broadcast, p.bytes, p.geometry, algo, proto);
      case BenchCollective::Reduce: return nccl_terms(hw, CollType::Reduce, p.bytes, p.geometry, algo, proto);
      case BenchCollective::AllToAll:
      case BenchCollective::Gather:
      case BenchCollective::Scatter: return nccl_terms(hw, CollType::AllToAll, p.bytes, p.geometry, algo);
    }
  } catch (const InputError& e) {
    throw InputError(p.where + ": " + e.what());
  }
  return {};
}

NcclFit fit_nccl_params(const std::vector<NcclTerms>& terms, const std::vector<double>& times_us,
                        const NcclParams& base) {
  BoxLsq lsq(kP);
  for (size_t i = 0; i < terms.size(); ++i) add_point(lsq, terms[i], times_us[i], 1);
  const auto theta = solve(lsq, base);
  NcclFit f;
  f.params = params_of(theta, base);
  for (int j = 0; j < kP; ++j) f.fitted[j] = lsq.nonzeros(j) > 0;
  f.points = static_cast<int>(terms.size());
  std::vector<double> pct;
  for (size_t i = 0; i < terms.size(); ++i) pct.push_back(error_pct(predict(terms[i], theta), times_us[i]));
  const ErrorStats s = stats(pct);
  f.mean_abs_pct = s.mean_abs_pct;
  f.max_abs_pct = s.max_abs_pct;
  return f;
}

NcclCalibrationResult calibrate_nccl(const std::vector<CommPoint>& points, const NcclHardware& hw,
                                     const NcclParamTable& current, Algorithm force,
                                     std::optional<Protocol> proto) {
  NcclCalibrationResult r;
  std::map<int, std::vector<PointResult>> by_nodes;
  for (const auto& p : points) {
    if (!(p.time_us > 0)) {
      r.skipped.push_back({p.where, "time is 0"});
      continue;
    }
    PointResult pr;
    pr.point = p;
    pr.point.geometry = normalized(p.geometry);
    pr.terms = comm_point_terms(hw, pr.point, force, proto);
    if (std::all_of(pr.terms.x.begin(), pr.terms.x.end(), [](double v) { return v == 0; })) {
      r.skipped.push_back({p.where, p.bytes == 0 ? "size is 0" : "one rank: NCCL does not communicate"});
      continue;
    }
    by_nodes[pr.point.geometry.nodes].push_back(std::move(pr));
  }
  for (auto& [nodes, pts] : by_nodes) r.groups.push_back(calibrate_group(nodes, std::move(pts), current));
  return r;
}

}  // namespace stepsim::cost
