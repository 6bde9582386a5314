#pragma once
// Training the learned overlap model and k-fold cross-validation (docs/SLOWDOWN-MODEL.md). Folds are a seeded
// shuffle of the rows dealt round-robin, so fold sizes differ by at most one and the same seed gives the same folds
// on every platform (our own Fisher-Yates on std::mt19937_64, whose output the standard fixes).
#include <cstdint>
#include <vector>

#include "stepsim/cost/overlap/learned/slowdown_dataset.hpp"
#include "stepsim/cost/overlap/learned/slowdown_metrics.hpp"
#include "stepsim/cost/overlap/learned/xgboost_booster.hpp"
#include "stepsim/cost/overlap/learned/xgboost_overlap_model.hpp"

namespace stepsim::overlap {

// fold_of[i] in [0, folds) for each of `rows` rows; requires 2 <= folds <= rows.
std::vector<int> assign_folds(size_t rows, int folds, uint64_t seed);

// One model on all `rows` (non-empty).
SlowdownModel train_slowdown_model(const hw::GpuCatalog& catalog_gpus, const std::vector<SlowdownRow>& rows,
                                   const BoosterParams& p);

struct FoldResult {
  int fold = 0;
  size_t train_rows = 0;
  SlowdownAccuracy test;  // on the fold's held-out rows
};

struct CrossValidation {
  std::vector<FoldResult> folds;
  std::vector<int> fold_of;          // per row
  std::vector<double> predicted;     // per row, by the model that did not see it
  SlowdownAccuracy overall;          // over every row's held-out prediction
};

CrossValidation cross_validate(const hw::GpuCatalog& catalog_gpus, const std::vector<SlowdownRow>& rows, int folds,
                               uint64_t seed, const BoosterParams& p);

}  // namespace stepsim::overlap
