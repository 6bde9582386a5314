#include "stepsim/cost/overlap/learned/xgboost_overlap_model.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"

namespace stepsim::overlap {
namespace {

constexpr const char* kFormat = "stepsim slowdown-xgboost 1";

std::string feature_list() {
  std::string s;
  for (const char* f : feature_names()) s += std::string(s.empty() ? "" : ",") + f;
  return s;
}

std::string read_model_file(const std::string& path) {
  return spec::read_whole_file(path, "slowdown model", kMaxModelBytes);
}

// The engine asks for the same (kernel, communication) pairs over and over; XGBoost prediction costs a DMatrix
// each time, so answers are memoised by the exact feature bits (predictions are pure, the cache changes nothing).
class XgboostOverlapModel final : public cost::OverlapModel {
 public:
  XgboostOverlapModel(SlowdownModel model, float gpu) : model_(std::move(model)), gpu_(gpu) {}

  double compute_slowdown(const cost::OverlapCompute& compute, std::span<const cost::OverlapComm> comms) const override {
    double s = 0;
    for (const cost::OverlapComm& c : comms) s += one(compute, c);
    return s;
  }

 private:
  using Key = std::array<uint32_t, kNumFeatures>;
  static constexpr size_t kCacheLimit = 1u << 20;

  double one(const cost::OverlapCompute& compute, const cost::OverlapComm& comm) const {
    const FeatureVector f = features_of(compute, comm, gpu_);
    Key key;
    for (int i = 0; i < kNumFeatures; ++i) key[i] = std::bit_cast<uint32_t>(f[i]);
    std::lock_guard<std::mutex> lock(mu_);
    if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
    const double s = model_.predict(compute, comm, gpu_);
    if (cache_.size() >= kCacheLimit) cache_.clear();
    cache_.emplace(key, s);
    return s;
  }

  SlowdownModel model_;
  float gpu_;
  mutable std::mutex mu_;
  mutable std::map<Key, double> cache_;
};

}  // namespace

SlowdownModel::SlowdownModel(Booster booster, std::vector<std::string> gpus, const std::string& training_note)
    : booster_(std::move(booster)), gpus_(std::move(gpus)) {
  booster_.set_attr("stepsim_model", kFormat);
  booster_.set_attr("stepsim_features", feature_list());
  booster_.set_attr("stepsim_gpus", nlohmann::json(gpus_).dump());
  booster_.set_attr("stepsim_combine", "sum over communication kernels in flight");
  if (!training_note.empty()) booster_.set_attr("stepsim_training", training_note);
}

SlowdownModel SlowdownModel::load(const std::string& path) {
  Booster b = Booster::load(read_model_file(path), path);
  const auto format = b.attr("stepsim_model");
  if (!format) throw InputError(path + ": an XGBoost model but not a stepsim slowdown model (no stepsim_model attribute)");
  if (*format != kFormat) {
    throw InputError(path + ": slowdown model format '" + format->substr(0, 60) + "', this stepsim reads '" + kFormat + "'");
  }
  if (b.attr("stepsim_features").value_or("") != feature_list()) {
    throw InputError(path + ": slowdown model features differ from this stepsim's (" + feature_list() + "); retrain it");
  }
  std::vector<std::string> gpus;
  try {
    gpus = nlohmann::json::parse(b.attr("stepsim_gpus").value_or("")).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(path + ": slowdown model attribute stepsim_gpus is not a JSON list of GPU names");
  }
  return SlowdownModel(std::move(b), std::move(gpus), "");
}

void SlowdownModel::save(const std::string& path) const {
  const std::string data = bytes();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(data.data(), static_cast<std::streamsize>(data.size())) || !out.flush()) {
    throw InputError(path + ": cannot write the slowdown model");
  }
}

std::string SlowdownModel::bytes() const { return booster_.save_json(); }

std::string SlowdownModel::training_note() const { return booster_.attr("stepsim_training").value_or("{}"); }

std::vector<double> SlowdownModel::predict(const hw::GpuCatalog& catalog_gpus, const std::vector<SlowdownRow>& rows) const {
  std::vector<FeatureVector> x;
  x.reserve(rows.size());
  for (const SlowdownRow& r : rows) x.push_back(features_of(r, gpu_code(catalog_gpus, gpus_, r.gpu)));
  const std::vector<float> p = booster_.predict(x);
  std::vector<double> out(p.size());
  for (size_t i = 0; i < p.size(); ++i) out[i] = std::max(0.0, static_cast<double>(p[i]));
  return out;
}

double SlowdownModel::predict(const cost::OverlapCompute& compute, const cost::OverlapComm& comm, float gpu) const {
  const std::vector<float> p = booster_.predict({features_of(compute, comm, gpu)});
  return std::max(0.0, static_cast<double>(p.front()));
}

std::unique_ptr<cost::OverlapModel> load_xgboost_overlap_model_if_trained(const hw::GpuCatalog& catalog_gpus,
                                                                          const std::string& path,
                                                                          const std::string& gpu_name, std::string* why) {
  SlowdownModel m = SlowdownModel::load(path);
  const float gpu = gpu_code(catalog_gpus, m.gpus(), gpu_name);
  if (std::isnan(gpu)) {
    std::string known;
    for (const auto& g : m.gpus()) known += (known.empty() ? "" : ", ") + g;
    if (why) *why = path + ": slowdown model was trained on " + (known.empty() ? "no GPU" : known) + ", not on " +
                    canonical_gpu(catalog_gpus, gpu_name);
    return nullptr;
  }
  return std::make_unique<XgboostOverlapModel>(std::move(m), gpu);
}

std::unique_ptr<cost::OverlapModel> load_xgboost_overlap_model(const hw::GpuCatalog& catalog_gpus, const std::string& path,
                                                                const std::string& gpu_name) {
  std::string why;
  auto model = load_xgboost_overlap_model_if_trained(catalog_gpus, path, gpu_name, &why);
  if (!model) throw InputError(why + "; collect its dataset (tools/overlap-dataset) and retrain");
  return model;
}

}  // namespace stepsim::overlap
