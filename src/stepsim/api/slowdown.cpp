#include "stepsim/api/slowdown.hpp"

#include <cmath>

#include "stepsim/catalog/catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/report/text_format.hpp"

namespace stepsim::api {
namespace {

std::string gpu_list(const std::vector<std::string>& gpus) {
  std::string s;
  for (const auto& g : gpus) s += (s.empty() ? "" : ", ") + g;
  return s;
}

void check_options(const SlowdownTrainOptions& o, size_t rows) {
  if (o.folds < 2 || static_cast<size_t>(o.folds) > rows) {
    throw InputError("--folds " + std::to_string(o.folds) + ": must be at least 2 and at most the " +
                     std::to_string(rows) + " rows of " + o.data);
  }
  if (o.booster.rounds < 1 || o.booster.rounds > 100000) {
    throw InputError("--rounds " + std::to_string(o.booster.rounds) + ": must be in [1, 100000]");
  }
  if (o.booster.max_depth < 1 || o.booster.max_depth > 32) {
    throw InputError("--max-depth " + std::to_string(o.booster.max_depth) + ": must be in [1, 32]");
  }
  if (!(o.booster.eta > 0 && o.booster.eta <= 1)) throw InputError("--eta: must be in (0, 1]");
}

std::string train_text(const SlowdownTrainOptions& o, const SlowdownTrainOutput& out) {
  const overlap::BoosterParams& b = o.booster;
  std::string t = report::format_text("# slowdown model: XGBoost regression, %d rounds, max depth %d, eta %g, seed %llu; %s: %zu rows, "
                         "GPUs %s\n",
                         b.rounds, b.max_depth, b.eta, static_cast<unsigned long long>(o.seed), o.data.c_str(), out.rows,
                         gpu_list(out.gpus).c_str());
  t += report::format_text("# %d-fold cross-validation: each row predicted by the model trained without its fold; within X%%:\n"
              "# predicted 1+s within X%% of measured 1+s; RMSE of the slowdown s\n",
              o.folds);
  std::vector<overlap::LabelledAccuracy> table;
  for (const auto& f : out.cv.folds) table.emplace_back("fold " + std::to_string(f.fold + 1), f.test);
  table.emplace_back("all (held-out)", out.cv.overall);
  t += overlap::accuracy_table("fold", table);
  t += report::format_text("# wrote %s (trained on all %zu rows); stepsim slowdown eval --model %s DATA.csv\n", o.out.c_str(),
              out.rows, o.out.c_str());
  return t;
}

nlohmann::json train_json(const SlowdownTrainOptions& o, const SlowdownTrainOutput& out) {
  nlohmann::json j = {{"data", o.data}, {"rows", out.rows}, {"model", o.out}, {"gpus", out.gpus},
                      {"folds", o.folds}, {"seed", o.seed}, {"rounds", o.booster.rounds},
                      {"max_depth", o.booster.max_depth}, {"eta", o.booster.eta}};
  for (const auto& f : out.cv.folds) {
    nlohmann::json fj = overlap::accuracy_json(f.test);
    fj["fold"] = f.fold + 1;
    fj["train_rows"] = f.train_rows;
    j["cv_folds"].push_back(fj);
  }
  j["cv_overall"] = overlap::accuracy_json(out.cv.overall);
  return j;
}

}  // namespace

SlowdownTrainOutput slowdown_train(const SlowdownTrainOptions& o) {
  const overlap::SlowdownDataset ds = overlap::read_slowdown_csv(o.data);
  check_options(o, ds.rows.size());
  overlap::BoosterParams booster = o.booster;
  booster.seed = o.seed;
  const hw::GpuCatalog& gpus = catalog::shipped().gpus;
  SlowdownTrainOutput out;
  out.rows = ds.rows.size();
  out.cv = overlap::cross_validate(gpus, ds.rows, o.folds, o.seed, booster);
  const overlap::SlowdownModel model = overlap::train_slowdown_model(gpus, ds.rows, booster);
  out.gpus = model.gpus();
  model.save(o.out);
  out.json = train_json(o, out);
  out.text = train_text(o, out);
  return out;
}

SlowdownEvalOutput slowdown_eval(const SlowdownEvalOptions& o) {
  const overlap::SlowdownModel model = overlap::SlowdownModel::load(o.model);
  const overlap::SlowdownDataset ds = overlap::read_slowdown_csv(o.data);
  const hw::GpuCatalog& gpus = catalog::shipped().gpus;
  SlowdownEvalOutput out;
  out.predicted = model.predict(gpus, ds.rows);
  size_t unseen = 0;
  for (const auto& r : ds.rows) unseen += std::isnan(overlap::gpu_code(gpus, model.gpus(), r.gpu));
  out.by_gpu = overlap::accuracy_by_gpu(gpus, ds.rows, out.predicted);
  out.importance = overlap::ranked_importance(model.importance());

  out.text = report::format_text("# slowdown model %s (GPUs %s; training %s) on %s: %zu rows\n", o.model.c_str(),
                    gpu_list(model.gpus()).c_str(), model.training_note().c_str(), o.data.c_str(), ds.rows.size());
  if (unseen) out.text += report::format_text("# %zu rows on GPUs the model was not trained on: their gpu feature is missing\n", unseen);
  out.text += "# within X%: predicted 1+s within X% of measured 1+s; RMSE of the slowdown s (Echo Table 6)\n";
  out.text += overlap::accuracy_table("gpu", out.by_gpu);
  out.text += "# feature importance: share of the total split gain (Echo Fig. 11)\n";
  out.text += overlap::importance_table(out.importance);

  out.json = {{"model", o.model}, {"data", o.data}, {"rows", ds.rows.size()}, {"gpus", model.gpus()}};
  for (const auto& [label, a] : out.by_gpu) {
    nlohmann::json aj = overlap::accuracy_json(a);
    aj["gpu"] = label;
    out.json["accuracy"].push_back(aj);
  }
  out.json["importance"] = overlap::importance_json(out.importance);
  for (size_t i = 0; i < ds.rows.size(); ++i) {
    out.json["predictions"].push_back(
        {{"line", ds.rows[i].line}, {"measured", ds.rows[i].slowdown}, {"predicted", out.predicted[i]}});
  }
  return out;
}

}  // namespace stepsim::api
