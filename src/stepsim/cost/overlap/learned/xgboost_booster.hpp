#pragma once
// A thin owner of one XGBoost booster (Debian's libxgboost C API): train a regression, predict, save and load the
// JSON model, string attributes, feature importances. Every call runs with nthread=1 and verbosity 0, so training
// and prediction are deterministic and XGBoost prints nothing; a failing XGBoost call throws.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/cost/overlap/learned/slowdown_features.hpp"

namespace stepsim::overlap {

struct BoosterParams {
  int rounds = 300;     // boosting rounds (trees)
  int max_depth = 6;
  double eta = 0.1;     // learning rate
  uint64_t seed = 0;    // XGBoost's seed (only random with subsampling, which we do not use; kept for the record)
};

struct FeatureImportance {
  std::string feature;
  double total_gain = 0;  // loss reduction summed over every split on the feature
  double splits = 0;      // how many splits use it
};

class Booster {
 public:
  Booster(Booster&& o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  Booster& operator=(Booster&& o) noexcept;
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  ~Booster();

  // Squared-error regression of y on x with exact greedy splits; base score = mean of y.
  static Booster train(const std::vector<FeatureVector>& x, const std::vector<float>& y, const BoosterParams& p);
  // From the bytes of a saved JSON model; InputError naming the path for anything else or when XGBoost refuses it.
  static Booster load(const std::string& bytes, const std::string& path);

  std::vector<float> predict(const std::vector<FeatureVector>& x) const;
  std::string save_json() const;  // XGBoost's JSON model format (attributes included)
  void set_attr(const std::string& key, const std::string& value);
  std::optional<std::string> attr(const std::string& key) const;
  // Every feature of feature_names(), in that order (zeros for features no split uses).
  std::vector<FeatureImportance> importance() const;

 private:
  explicit Booster(void* h) : handle_(h) {}
  void* handle_ = nullptr;  // BoosterHandle
};

}  // namespace stepsim::overlap
