#include "stepsim/cost/overlap/learned/slowdown_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "stepsim/cost/overlap/learned/slowdown_features.hpp"

namespace stepsim::overlap {
namespace {

std::string line(const char* f, const char* label, size_t rows, double a, double b, double c, double d) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, label, rows, a, b, c, d);
  return buf;
}

double gain_total(const std::vector<FeatureImportance>& imp) {
  double t = 0;
  for (const auto& e : imp) t += e.total_gain;
  return t;
}

double share(const FeatureImportance& e, double total) { return total > 0 ? e.total_gain / total : 0; }

}  // namespace

std::vector<LabelledAccuracy> accuracy_by_gpu(const hw::GpuCatalog& catalog_gpus, const std::vector<SlowdownRow>& rows,
                                              const std::vector<double>& predicted) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> groups;
  std::vector<double> measured;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto& g = groups[canonical_gpu(catalog_gpus, rows[i].gpu)];
    g.first.push_back(rows[i].slowdown);
    g.second.push_back(predicted[i]);
    measured.push_back(rows[i].slowdown);
  }
  std::vector<LabelledAccuracy> out;
  for (const auto& [gpu, g] : groups) out.emplace_back(gpu, slowdown_accuracy(g.first, g.second));
  out.emplace_back("all", slowdown_accuracy(measured, predicted));
  return out;
}

std::string accuracy_table(const std::string& label_header, const std::vector<LabelledAccuracy>& rows) {
  char head[256];
  std::snprintf(head, sizeof head, "%-16s %8s %10s %10s %10s %9s\n", label_header.c_str(), "rows", "within 5%",
                "within 10%", "within 15%", "RMSE");
  std::string s = head;
  for (const auto& [label, a] : rows) {
    s += line("%-16s %8zu %9.2f%% %9.2f%% %9.2f%% %9.4f\n", label.c_str(), a.rows, 100 * a.within_5,
              100 * a.within_10, 100 * a.within_15, a.rmse);
  }
  return s;
}

nlohmann::json accuracy_json(const SlowdownAccuracy& a) {
  return {{"rows", a.rows},
          {"within_5_pct", 100 * a.within_5},
          {"within_10_pct", 100 * a.within_10},
          {"within_15_pct", 100 * a.within_15},
          {"rmse", a.rmse}};
}

std::vector<FeatureImportance> ranked_importance(std::vector<FeatureImportance> imp) {
  std::stable_sort(imp.begin(), imp.end(), [](const auto& a, const auto& b) { return a.total_gain > b.total_gain; });
  return imp;
}

std::string importance_table(const std::vector<FeatureImportance>& ranked) {
  const double total = gain_total(ranked);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-24s %9s %9s\n", "feature", "gain", "splits");
  std::string s = buf;
  for (const auto& e : ranked) {
    std::snprintf(buf, sizeof buf, "%-24s %8.2f%% %9.0f\n", e.feature.c_str(), 100 * share(e, total), e.splits);
    s += buf;
  }
  return s;
}

nlohmann::json importance_json(const std::vector<FeatureImportance>& ranked) {
  const double total = gain_total(ranked);
  nlohmann::json j = nlohmann::json::array();
  for (const auto& e : ranked) {
    j.push_back({{"feature", e.feature}, {"gain_share_pct", 100 * share(e, total)}, {"total_gain", e.total_gain},
                 {"splits", e.splits}});
  }
  return j;
}

}  // namespace stepsim::overlap
