#include "stepsim/cost/overlap/learned/slowdown_training.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "stepsim/cost/overlap/learned/slowdown_features.hpp"

namespace stepsim::overlap {

std::vector<int> assign_folds(size_t rows, int folds, uint64_t seed) {
  if (folds < 2 || static_cast<size_t>(folds) > rows) throw std::logic_error("assign_folds: need 2 <= folds <= rows");
  std::vector<size_t> order(rows);
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(seed);
  for (size_t i = rows - 1; i > 0; --i) std::swap(order[i], order[rng() % (i + 1)]);
  std::vector<int> fold_of(rows);
  for (size_t p = 0; p < rows; ++p) fold_of[order[p]] = static_cast<int>(p % static_cast<size_t>(folds));
  return fold_of;
}

SlowdownModel train_slowdown_model(const hw::GpuCatalog& catalog_gpus, const std::vector<SlowdownRow>& rows,
                                   const BoosterParams& p) {
  std::vector<std::string> gpus;
  for (const SlowdownRow& r : rows) gpus.push_back(canonical_gpu(catalog_gpus, r.gpu));
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  std::vector<FeatureVector> x;
  std::vector<float> y;
  for (const SlowdownRow& r : rows) {
    x.push_back(features_of(r, gpu_code(catalog_gpus, gpus, r.gpu)));
    y.push_back(static_cast<float>(r.slowdown));
  }
  const nlohmann::json note = {{"rows", rows.size()}, {"rounds", p.rounds}, {"max_depth", p.max_depth},
                               {"eta", p.eta},        {"seed", p.seed}};
  return SlowdownModel(Booster::train(x, y, p), std::move(gpus), note.dump());
}

CrossValidation cross_validate(const hw::GpuCatalog& catalog_gpus, const std::vector<SlowdownRow>& rows, int folds,
                               uint64_t seed, const BoosterParams& p) {
  CrossValidation cv;
  cv.fold_of = assign_folds(rows.size(), folds, seed);
  cv.predicted.assign(rows.size(), 0.0);
  for (int k = 0; k < folds; ++k) {
    std::vector<SlowdownRow> train, test;
    std::vector<size_t> test_index;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (cv.fold_of[i] == k) {
        test.push_back(rows[i]);
        test_index.push_back(i);
      } else {
        train.push_back(rows[i]);
      }
    }
    const std::vector<double> pred = train_slowdown_model(catalog_gpus, train, p).predict(catalog_gpus, test);
    std::vector<double> measured;
    for (size_t j = 0; j < test.size(); ++j) {
      cv.predicted[test_index[j]] = pred[j];
      measured.push_back(test[j].slowdown);
    }
    cv.folds.push_back({k, train.size(), slowdown_accuracy(measured, pred)});
  }
  std::vector<double> measured;
  for (const SlowdownRow& r : rows) measured.push_back(r.slowdown);
  cv.overall = slowdown_accuracy(measured, cv.predicted);
  return cv;
}

}  // namespace stepsim::overlap
