#pragma once
// The learned overlap-slowdown model (simulation.overlap_model: xgboost; Echo §6): an XGBoost regression of the
// slowdown on Echo Table 4's features plus the GPU type. The model file is XGBoost's JSON model with stepsim's
// attributes (format marker, feature names, the GPU types it was trained on). With several communication kernels
// in flight the per-kernel predictions are summed: each NCCL kernel takes its own SMs (channels) and its own share
// of memory bandwidth, and a dataset of single kernels cannot say more. docs/SLOWDOWN-MODEL.md.
#include <memory>
#include <string>
#include <vector>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/cost/overlap/overlap_model.hpp"
#include "stepsim/cost/overlap/learned/slowdown_dataset.hpp"
#include "stepsim/cost/overlap/learned/xgboost_booster.hpp"

namespace stepsim::overlap {

constexpr size_t kMaxModelBytes = 256u << 20;

class SlowdownModel {
 public:
  // `gpus`: canonical GPU names of the training rows, sorted (their index is the gpu feature).
  SlowdownModel(Booster booster, std::vector<std::string> gpus, const std::string& training_note);

  // InputError naming the path: missing, too big, not an XGBoost model, not a stepsim slowdown model.
  static SlowdownModel load(const std::string& path);
  void save(const std::string& path) const;  // InputError naming the path when it cannot be written
  std::string bytes() const;                 // what save() writes (deterministic for a given training)

  // Predicted slowdown, clamped to >= 0. A row whose GPU the model has not seen gets a missing gpu feature.
  std::vector<double> predict(const hw::GpuCatalog& catalog_gpus, const std::vector<SlowdownRow>& rows) const;
  double predict(const cost::OverlapCompute& compute, const cost::OverlapComm& comm, float gpu_code) const;

  const std::vector<std::string>& gpus() const { return gpus_; }
  std::string training_note() const;  // JSON text the trainer stored (rows, rounds, depth, eta, seed)
  std::vector<FeatureImportance> importance() const { return booster_.importance(); }

 private:
  Booster booster_;
  std::vector<std::string> gpus_;
};

// The simulator's factory: the model at `path` for the job's GPU. InputError naming the path when the file is
// missing or corrupt, or when the model was not trained on `gpu_name` (catalog names and aliases match).
std::unique_ptr<cost::OverlapModel> load_xgboost_overlap_model(const hw::GpuCatalog& catalog_gpus, const std::string& path,
                                                                const std::string& gpu_name);
// As above, but a model not trained on `gpu_name` is no error: nullptr, and *why says which GPUs it knows.
std::unique_ptr<cost::OverlapModel> load_xgboost_overlap_model_if_trained(const hw::GpuCatalog& catalog_gpus,
                                                                          const std::string& path,
                                                                          const std::string& gpu_name, std::string* why);

}  // namespace stepsim::overlap
