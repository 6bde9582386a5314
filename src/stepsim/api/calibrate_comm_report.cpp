#include "stepsim/api/calibrate_comm_report.hpp"

#include <filesystem>

#include <cstdio>
#include <string>

#include "stepsim/calibrate/calibration_store.hpp"
#include "stepsim/report/text_format.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::api {
namespace {

constexpr const char* kNames[cost::kNcclParamCount] = {"alpha_us",         "beta_us",          "gamma_us",
                                                       "intra_efficiency", "inter_efficiency", "reduce_GBps"};

std::array<double, cost::kNcclParamCount> values(const cost::NcclParams& p) {
  return {p.alpha_us, p.beta_us, p.gamma_us, p.intra_efficiency, p.inter_efficiency, p.reduce_GBps};
}

double pct(double predicted, double measured) { return (predicted - measured) / measured * 100; }

std::string algo_proto(const cost::NcclTerms& t) {
  return std::string(cost::name_of(t.algorithm)) + "/" + cost::name_of(t.protocol);
}

// One line of parameters (per-chunk and per-collective fits).
std::string fit_line(const std::string& label, const cost::NcclFit& f) {
  std::string s = report::format_text("  %-16s %6d", label.c_str(), f.points);
  const auto v = values(f.params);
  for (int j = 0; j < cost::kNcclParamCount; ++j) s += report::format_text(" %10.4g%s", v[j], f.fitted[j] ? " " : "*");
  return s + report::format_text(" %8.1f %8.1f\n", f.mean_abs_pct, f.max_abs_pct);
}

std::string fit_header(const char* label) {
  std::string s = report::format_text("# %-16s %6s", label, "points");
  for (const char* n : {"alpha_us", "beta_us", "gamma_us", "intra_eff", "inter_eff", "reduce_GBps"}) s += report::format_text(" %11s", n);
  return s + report::format_text(" %8s %8s\n", "mean|%|", "max|%|");
}

nlohmann::json params_json(const cost::NcclParams& p) {
  const auto v = values(p);
  nlohmann::json j;
  for (int i = 0; i < cost::kNcclParamCount; ++i) j[kNames[i]] = v[i];
  return j;
}

nlohmann::json fit_json(const cost::NcclFit& f) {
  nlohmann::json fitted = nlohmann::json::array();
  for (int i = 0; i < cost::kNcclParamCount; ++i) {
    if (f.fitted[i]) fitted.push_back(kNames[i]);
  }
  return {{"params", params_json(f.params)},
          {"fitted", fitted},
          {"points", f.points},
          {"mean_abs_error_pct", f.mean_abs_pct},
          {"max_abs_error_pct", f.max_abs_pct}};
}

}  // namespace

std::string calibration_text(const CalibrationInput& in, const cost::NcclProfile& profile,
                             const cost::NcclCalibrationResult& r) {
  std::string s;
  size_t points = 0;
  for (const auto& g : r.groups) points += g.points.size();
  s += report::format_text("# stepsim calibrate comm: %zu measured call%s\n", points, points == 1 ? "" : "s");
  const hw::CalibrationKey key = hw::calibration_key(catalog::shipped().gpu(in.cluster.gpu), in.cluster);
  s += "# cluster: " + key.gpu + ", " + key.interconnect + ", " + std::to_string(in.cluster.gpus_per_node) +
       (in.cluster.gpus_per_node == 1 ? " GPU" : " GPUs") + " per node; NCCL profile " + profile.name + "; NCCL version " +
       (in.nccl_version.empty() ? "unknown" : in.nccl_version) + "\n";
  for (const auto& n : in.notes) s += "# note: " + n + "\n";
  if (!r.skipped.empty()) {
    s += report::format_text("# skipped %zu point(s) with nothing to fit:", r.skipped.size());
    for (size_t i = 0; i < r.skipped.size() && i < 5; ++i) s += " " + r.skipped[i].where + " (" + r.skipped[i].why + ")";
    s += r.skipped.size() > 5 ? " ...\n" : "\n";
  }
  for (const auto& g : r.groups) {
    const char* cv = g.cv_kind == "leave-one-out" ? "loo" : "cv10";
    s += report::format_text("#\n# %d node%s, %zu points\n", g.nodes, g.nodes == 1 ? "" : "s", g.points.size());
    s += report::format_text("# %-14s %14s %5s %5s  %-14s %12s %12s %7s %12s %7s %12s %7s\n", "collective", "size(B)", "ranks", "nodes",
             "algo/proto", "measured(us)", "before(us)", "err%", "after(us)", "err%",
             (std::string(cv) + "(us)").c_str(), "err%");
    int proto_diff = 0, proto_known = 0;
    std::string first_diff;
    for (const auto& p : g.points) {
      const double t = p.point.time_us;
      s += report::format_text("  %-14s %14llu %5d %5d  %-14s %12.2f %12.2f %+7.1f %12.2f %+7.1f %12.2f %+7.1f\n",
               cost::name_of(p.point.collective), static_cast<unsigned long long>(p.point.bytes), p.point.geometry.ranks,
               p.point.geometry.nodes, algo_proto(p.terms).c_str(), t, p.before_us, pct(p.before_us, t), p.after_us,
               pct(p.after_us, t), p.cv_us, pct(p.cv_us, t));
      if (p.point.protocol) {
        ++proto_known;
        if (*p.point.protocol != p.terms.protocol && proto_diff++ == 0) {
          first_diff = p.point.where + " ran " + cost::name_of(*p.point.protocol) + ", the model's tuner picks " +
                       cost::name_of(p.terms.protocol);
        }
      }
    }
    if (proto_diff > 0) {
      s += report::format_text("# note: %d of %d records ran another protocol than the model assumes (first: %s)\n", proto_diff,
               proto_known, first_diff.c_str());
    }
    s += report::format_text("# %-16s %12s %12s\n", "parameter", "profile", "fitted");
    const auto before = values(g.base), after = values(g.joint.params);
    for (int j = 0; j < cost::kNcclParamCount; ++j) {
      s += report::format_text("  %-16s %12.4g %12.4g%s\n", kNames[j], before[j], after[j],
               g.joint.fitted[j] ? "" : "  (profile value: no point exercises it)");
    }
    if (static_cast<int>(g.points.size()) <= g.joint.fitted_count()) {
      s += report::format_text("# note: %zu points for %d exercised parameters: the fit is not determined by the data; trust the %s error\n",
               g.points.size(), g.joint.fitted_count(), g.cv_kind.c_str());
    }
    s += report::format_text("# error, mean / max |%%|: profile %.1f / %.1f   fitted %.1f / %.1f   %s %.1f / %.1f\n",
             g.before.mean_abs_pct, g.before.max_abs_pct, g.after.mean_abs_pct, g.after.max_abs_pct, g.cv_kind.c_str(),
             g.cv.mean_abs_pct, g.cv.max_abs_pct);
    if (g.by_chunk.empty()) {
      s += "# per chunk size: none has more points than exercised parameters\n";
    } else {
      s += "# per chunk size ('*': profile value)\n" + fit_header("chunk_bytes");
      for (const auto& [chunk, f] : g.by_chunk) s += fit_line(std::to_string(chunk), f);
    }
    if (!g.by_collective.empty()) {
      s += "# per collective ('*': profile value)\n" + fit_header("collective");
      for (const auto& [coll, f] : g.by_collective) s += fit_line(cost::name_of(coll), f);
    }
  }
  return s;
}

nlohmann::json calibration_json(const CalibrationInput& in, const cost::NcclProfile& profile,
                                const cost::NcclCalibrationResult& r) {
  const hw::CalibrationKey key = hw::calibration_key(catalog::shipped().gpu(in.cluster.gpu), in.cluster);
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : r.groups) {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& p : g.points) {
      pts.push_back({{"where", p.point.where},
                     {"collective", cost::name_of(p.point.collective)},
                     {"size_bytes", p.point.bytes},
                     {"ranks", p.point.geometry.ranks},
                     {"nodes", p.point.geometry.nodes},
                     {"ranks_per_node", p.point.geometry.ranks_per_node},
                     {"algorithm", cost::name_of(p.terms.algorithm)},
                     {"protocol", cost::name_of(p.terms.protocol)},
                     {"channels", p.terms.channels},
                     {"chunk_bytes", p.terms.chunk_bytes},
                     {"measured_us", p.point.time_us},
                     {"before_us", p.before_us},
                     {"after_us", p.after_us},
                     {"cv_us", p.cv_us}});
    }
    nlohmann::json chunks = nlohmann::json::array(), colls = nlohmann::json::array();
    for (const auto& [chunk, f] : g.by_chunk) {
      auto j = fit_json(f);
      j["chunk_bytes"] = chunk;
      chunks.push_back(j);
    }
    for (const auto& [coll, f] : g.by_collective) {
      auto j = fit_json(f);
      j["collective"] = cost::name_of(coll);
      colls.push_back(j);
    }
    groups.push_back({{"nodes", g.nodes},
                      {"profile_params", params_json(g.base)},
                      {"joint", fit_json(g.joint)},
                      {"error_pct",
                       {{"before", {{"mean", g.before.mean_abs_pct}, {"max", g.before.max_abs_pct}}},
                        {"after", {{"mean", g.after.mean_abs_pct}, {"max", g.after.max_abs_pct}}},
                        {"cv", {{"mean", g.cv.mean_abs_pct}, {"max", g.cv.max_abs_pct}, {"kind", g.cv_kind}}}}},
                      {"points", pts},
                      {"by_chunk", chunks},
                      {"by_collective", colls}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& k : r.skipped) skipped.push_back({{"where", k.where}, {"why", k.why}});
  return {{"gpu", key.gpu},
          {"interconnect", key.interconnect},
          {"gpus_per_node", in.cluster.gpus_per_node},
          {"nccl_version", in.nccl_version},
          {"profile", profile.name},
          {"files", in.files},
          {"notes", in.notes},
          {"skipped", skipped},
          {"groups", groups}};
}

std::string store_listing(const std::string& path, const std::vector<hw::CalibrationRow>& rows) {
  std::string s = report::format_text("# calibration store %s: %zu row%s\n", path.c_str(), rows.size(), rows.size() == 1 ? "" : "s");
  if (rows.empty()) return s;
  s += report::format_text("# %4s %-14s %-28s %5s %4s %-8s %-14s %11s %10s %10s %10s %10s %10s %10s %6s %7s %7s %7s  %-20s %s\n", "id",
           "gpu", "interconnect", "nodes", "gpn", "nccl", "collective", "chunk_bytes", "alpha_us", "beta_us", "gamma_us",
           "intra_eff", "inter_eff", "reduce_GBps", "points", "mean|%|", "max|%|", "cv|%|", "created", "source");
  for (const auto& r : rows) {
    auto mark = [&](const char* name) { return (("," + r.fitted + ",").find(std::string(",") + name + ",") == std::string::npos) ? "*" : " "; };
    const std::string cv = r.cv_mean_abs_error_pct ? report::format_text("%7.1f", *r.cv_mean_abs_error_pct) : report::format_text("%7s", "-");
    s += report::format_text("  %4lld %-14s %-28s %5d %4d %-8s %-14s %11llu %9.4g%s %9.4g%s %9.4g%s %9.4g%s %9.4g%s %9.4g%s %6d %7.1f %7.1f %s  %-20s %s\n",
             static_cast<long long>(r.id), r.gpu.c_str(), r.interconnect.c_str(), r.nodes, r.gpus_per_node,
             r.nccl_version.empty() ? "-" : r.nccl_version.c_str(), r.collective.c_str(),
             static_cast<unsigned long long>(r.chunk_bytes), r.alpha_us, mark("alpha_us"), r.beta_us, mark("beta_us"),
             r.gamma_us, mark("gamma_us"), r.intra_efficiency, mark("intra_efficiency"), r.inter_efficiency,
             mark("inter_efficiency"), r.reduce_GBps, mark("reduce_GBps"), r.points, r.mean_abs_error_pct,
             r.max_abs_error_pct, cv.c_str(), r.created.c_str(), r.source.c_str());
  }
  s += "# '*': not fitted (no measured point exercised it): the profile value at calibration time\n";
  return s;
}

std::string calibration_remove(const std::string& store, const std::vector<int64_t>& ids,
                               const std::vector<std::string>& archs) {
  const std::string path = store.empty() ? hw::default_calibration_store_path() : store;
  if (ids.empty() && archs.empty()) throw InputError("calibrate remove: name the rows (IDS, from calibrate list) or "
                                                     "--compute ARCH");
  if (!std::filesystem::exists(path)) throw InputError(path + ": no such calibration store");
  hw::CalibrationStore opened = hw::CalibrationStore::open(path);
  const int64_t n = opened.remove(ids, archs);
  return "# removed " + report::counted(n, "row", "rows") + " from " + path + "\n";
}

std::string calibration_list(const std::string& store) {
  const std::string path = store.empty() ? hw::default_calibration_store_path() : store;
  const auto opened = hw::CalibrationStore::open_existing(path);
  if (!opened) return "# calibration store " + path + ": no calibrations yet (stepsim calibrate comm writes them)\n";
  return store_listing(path, opened->all());
}

}  // namespace stepsim::api
