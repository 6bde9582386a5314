#include "stepsim/cost/overlap/learned/xgboost_booster.hpp"

#include <xgboost/c_api.h>

#include <charconv>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "stepsim/io/input_error.hpp"

namespace stepsim::overlap {
namespace {

// XGBoost's global configuration is per thread: silence it on each thread before its first call.
void quiet() {
  thread_local const bool done = XGBSetGlobalConfig("{\"verbosity\": 0}") == 0;
  (void)done;
}

// XGBoost's last error, first line only (it may append a stack trace), kept short for a one-line message.
std::string last_error() {
  std::string e = XGBGetLastError();
  e = e.substr(0, e.find('\n'));
  if (e.size() > 200) e = e.substr(0, 200) + "...";
  return e;
}

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string("XGBoost ") + what + " failed: " + last_error());
}

std::string number(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

class Matrix {
 public:
  explicit Matrix(const std::vector<FeatureVector>& x) {
    static_assert(sizeof(FeatureVector) == kNumFeatures * sizeof(float), "rows must be contiguous floats");
    check(XGDMatrixCreateFromMat(x.empty() ? nullptr : x.front().data(), x.size(), kNumFeatures, NAN, &h_),
          "DMatrix creation");
  }
  ~Matrix() { XGDMatrixFree(h_); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  DMatrixHandle get() const { return h_; }

 private:
  DMatrixHandle h_ = nullptr;
};

void set_param(BoosterHandle h, const char* key, const std::string& value) {
  check(XGBoosterSetParam(h, key, value.c_str()), "parameter setting");
}

}  // namespace

Booster& Booster::operator=(Booster&& o) noexcept {
  if (this != &o) {
    if (handle_) XGBoosterFree(handle_);
    handle_ = o.handle_;
    o.handle_ = nullptr;
  }
  return *this;
}

Booster::~Booster() {
  if (handle_) XGBoosterFree(handle_);
}

Booster Booster::train(const std::vector<FeatureVector>& x, const std::vector<float>& y, const BoosterParams& p) {
  if (x.empty() || x.size() != y.size()) throw std::logic_error("Booster::train: no rows or labels of another length");
  quiet();
  Matrix m(x);
  check(XGDMatrixSetFloatInfo(m.get(), "label", y.data(), y.size()), "label setting");
  DMatrixHandle dm = m.get();
  BoosterHandle h = nullptr;
  check(XGBoosterCreate(&dm, 1, &h), "booster creation");
  Booster b(h);
  const double mean = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
  set_param(h, "objective", "reg:squarederror");
  set_param(h, "tree_method", "exact");  // no histogram sketch: the same splits whatever the row order of bins
  set_param(h, "nthread", "1");          // one thread: floating-point sums in one order, bit-identical models
  set_param(h, "verbosity", "0");
  set_param(h, "max_depth", std::to_string(p.max_depth));
  set_param(h, "eta", number(p.eta));
  set_param(h, "seed", std::to_string(p.seed));
  set_param(h, "base_score", number(mean));
  std::vector<const char*> names(feature_names().begin(), feature_names().end());
  check(XGBoosterSetStrFeatureInfo(h, "feature_name", names.data(), names.size()), "feature naming");
  for (int i = 0; i < p.rounds; ++i) check(XGBoosterUpdateOneIter(h, i, dm), "training round");
  return b;
}

Booster Booster::load(const std::string& bytes, const std::string& path) {
  quiet();
  BoosterHandle h = nullptr;
  check(XGBoosterCreate(nullptr, 0, &h), "booster creation");
  Booster b(h);
  // Only JSON is accepted: XGBoost's legacy binary reader trusts length fields and may try to allocate any size.
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || bytes[first] != '{') {
    throw InputError(path + ": not an XGBoost JSON model (" +
                     (first == std::string::npos ? std::string("empty file") : "it does not start with '{'") + ")");
  }
  if (XGBoosterLoadModelFromBuffer(h, bytes.data() + first, bytes.size() - first) != 0) {
    throw InputError(path + ": not an XGBoost model: " + last_error());
  }
  set_param(h, "nthread", "1");
  set_param(h, "verbosity", "0");
  bst_ulong n = 0;
  check(XGBoosterGetNumFeature(h, &n), "feature count");
  if (n != kNumFeatures) {
    throw InputError(path + ": the XGBoost model has " + std::to_string(n) + " features, a slowdown model " +
                     std::to_string(kNumFeatures));
  }
  return b;
}

std::vector<float> Booster::predict(const std::vector<FeatureVector>& x) const {
  if (x.empty()) return {};
  quiet();
  Matrix m(x);
  bst_ulong len = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(handle_, m.get(), 0, 0, 0, &len, &out), "prediction");
  if (len != x.size()) throw std::runtime_error("XGBoost prediction returned " + std::to_string(len) + " values");
  return std::vector<float>(out, out + len);
}

std::string Booster::save_json() const {
  quiet();
  bst_ulong len = 0;
  const char* out = nullptr;
  check(XGBoosterSaveModelToBuffer(handle_, "{\"format\": \"json\"}", &len, &out), "model saving");
  return std::string(out, len);
}

void Booster::set_attr(const std::string& key, const std::string& value) {
  check(XGBoosterSetAttr(handle_, key.c_str(), value.c_str()), "attribute setting");
}

std::optional<std::string> Booster::attr(const std::string& key) const {
  const char* out = nullptr;
  int ok = 0;
  check(XGBoosterGetAttr(handle_, key.c_str(), &out, &ok), "attribute reading");
  if (!ok || !out) return std::nullopt;
  return std::string(out);
}

std::vector<FeatureImportance> Booster::importance() const {
  quiet();
  std::vector<FeatureImportance> imp;
  for (const char* f : feature_names()) imp.push_back({f, 0, 0});
  std::string names = "[";
  for (int i = 0; i < kNumFeatures; ++i) names += std::string(i ? "," : "") + "\"" + feature_names()[i] + "\"";
  names += "]";
  for (const char* type : {"total_gain", "weight"}) {
    const std::string config = std::string("{\"importance_type\": \"") + type + "\", \"feature_names\": " + names + "}";
    bst_ulong n = 0, dim = 0;
    const char** features = nullptr;
    const bst_ulong* shape = nullptr;
    const float* scores = nullptr;
    check(XGBoosterFeatureScore(handle_, config.c_str(), &n, &features, &dim, &shape, &scores), "feature scores");
    for (bst_ulong i = 0; i < n; ++i) {
      for (auto& e : imp) {
        if (e.feature != features[i]) continue;
        (std::string(type) == "weight" ? e.splits : e.total_gain) = scores[i];
      }
    }
  }
  return imp;
}

}  // namespace stepsim::overlap
