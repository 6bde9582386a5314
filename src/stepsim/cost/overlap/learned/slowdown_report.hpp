#pragma once
// Text and JSON of the slowdown model's accuracy (Echo Table 6: within 5/10/15%, RMSE) and feature importance
// (Echo Fig. 11: each feature's share of the total split gain), as `stepsim slowdown train|eval` print them.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/cost/overlap/learned/slowdown_dataset.hpp"
#include "stepsim/cost/overlap/learned/slowdown_metrics.hpp"
#include "stepsim/cost/overlap/learned/xgboost_booster.hpp"

namespace stepsim::overlap {

using LabelledAccuracy = std::pair<std::string, SlowdownAccuracy>;

// Accuracy per group (gpu, fold, ...) and over all rows, grouped by the canonical GPU name, sorted; "all" last.
std::vector<LabelledAccuracy> accuracy_by_gpu(const hw::GpuCatalog& catalog_gpus, const std::vector<SlowdownRow>& rows,
                                              const std::vector<double>& predicted);

// One line per entry: label, rows, within 5%, 10%, 15% (percent, 2 decimals), RMSE (4 decimals).
std::string accuracy_table(const std::string& label_header, const std::vector<LabelledAccuracy>& rows);
nlohmann::json accuracy_json(const SlowdownAccuracy& a);

// Sorted by gain share, largest first (ties: feature order); shares sum to 100% unless no split was made.
std::vector<FeatureImportance> ranked_importance(std::vector<FeatureImportance> imp);
std::string importance_table(const std::vector<FeatureImportance>& ranked);
nlohmann::json importance_json(const std::vector<FeatureImportance>& ranked);

}  // namespace stepsim::overlap
