// stepsim slowdown train: k-fold cross-validate the XGBoost overlap-slowdown model on a dataset, then train it on
// every row and save it. stepsim slowdown eval: a saved model's accuracy on a dataset (Echo Table 6) and its
// feature importance (Echo Fig. 11). docs/SLOWDOWN-MODEL.md.
#include "stepsim/cli/cmd_slowdown.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "stepsim/cost/overlap/learned/slowdown_report.hpp"
#include "stepsim/cost/overlap/learned/slowdown_training.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::cli {
namespace {

struct TrainOptions {
  std::string data, out, json;
  int folds = 5;
  uint64_t seed = 0;
  overlap::BoosterParams booster;
};

struct EvalOptions {
  std::string model, data, json;
};

std::string gpu_list(const std::vector<std::string>& gpus) {
  std::string s;
  for (const auto& g : gpus) s += (s.empty() ? "" : ", ") + g;
  return s;
}

void check_options(const TrainOptions& o, size_t rows) {
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

int run_train(const TrainOptions& o) {
  const overlap::SlowdownDataset ds = overlap::read_slowdown_csv(o.data);
  check_options(o, ds.rows.size());
  const overlap::CrossValidation cv = overlap::cross_validate(catalog::shipped().gpus, ds.rows, o.folds, o.seed, o.booster);
  const overlap::SlowdownModel model = overlap::train_slowdown_model(catalog::shipped().gpus, ds.rows, o.booster);

  std::printf("# slowdown model: XGBoost regression, %d rounds, max depth %d, eta %g, seed %llu; %s: %zu rows, GPUs %s\n",
              o.booster.rounds, o.booster.max_depth, o.booster.eta, static_cast<unsigned long long>(o.seed),
              o.data.c_str(), ds.rows.size(), gpu_list(model.gpus()).c_str());
  std::printf("# %d-fold cross-validation: each row predicted by the model trained without its fold; within X%%:\n"
              "# predicted 1+s within X%% of measured 1+s; RMSE of the slowdown s\n",
              o.folds);
  std::vector<overlap::LabelledAccuracy> table;
  for (const auto& f : cv.folds) table.emplace_back("fold " + std::to_string(f.fold + 1), f.test);
  table.emplace_back("all (held-out)", cv.overall);
  std::cout << overlap::accuracy_table("fold", table);
  model.save(o.out);
  std::printf("# wrote %s (trained on all %zu rows); stepsim slowdown eval --model %s DATA.csv\n", o.out.c_str(),
              ds.rows.size(), o.out.c_str());
  if (!o.json.empty()) {
    nlohmann::json j = {{"data", o.data}, {"rows", ds.rows.size()}, {"model", o.out}, {"gpus", model.gpus()},
                        {"folds", o.folds}, {"seed", o.seed}, {"rounds", o.booster.rounds},
                        {"max_depth", o.booster.max_depth}, {"eta", o.booster.eta}};
    for (const auto& f : cv.folds) {
      nlohmann::json fj = overlap::accuracy_json(f.test);
      fj["fold"] = f.fold + 1;
      fj["train_rows"] = f.train_rows;
      j["cv_folds"].push_back(fj);
    }
    j["cv_overall"] = overlap::accuracy_json(cv.overall);
    write_output_file(o.json, j.dump(2) + "\n", "slowdown training JSON");
  }
  return 0;
}

int run_eval(const EvalOptions& o) {
  const overlap::SlowdownModel model = overlap::SlowdownModel::load(o.model);
  const overlap::SlowdownDataset ds = overlap::read_slowdown_csv(o.data);
  const std::vector<double> predicted = model.predict(catalog::shipped().gpus, ds.rows);
  size_t unseen = 0;
  for (const auto& r : ds.rows) unseen += std::isnan(overlap::gpu_code(catalog::shipped().gpus, model.gpus(), r.gpu));

  std::printf("# slowdown model %s (GPUs %s; training %s) on %s: %zu rows\n", o.model.c_str(),
              gpu_list(model.gpus()).c_str(), model.training_note().c_str(), o.data.c_str(), ds.rows.size());
  if (unseen) std::printf("# %zu rows on GPUs the model was not trained on: their gpu feature is missing\n", unseen);
  std::printf("# within X%%: predicted 1+s within X%% of measured 1+s; RMSE of the slowdown s (Echo Table 6)\n");
  const auto by_gpu = overlap::accuracy_by_gpu(catalog::shipped().gpus, ds.rows, predicted);
  std::cout << overlap::accuracy_table("gpu", by_gpu);
  const auto imp = overlap::ranked_importance(model.importance());
  std::printf("# feature importance: share of the total split gain (Echo Fig. 11)\n");
  std::cout << overlap::importance_table(imp);
  if (!o.json.empty()) {
    nlohmann::json j = {{"model", o.model}, {"data", o.data}, {"rows", ds.rows.size()}, {"gpus", model.gpus()}};
    for (const auto& [label, a] : by_gpu) {
      nlohmann::json aj = overlap::accuracy_json(a);
      aj["gpu"] = label;
      j["accuracy"].push_back(aj);
    }
    j["importance"] = overlap::importance_json(imp);
    for (size_t i = 0; i < ds.rows.size(); ++i) {
      j["predictions"].push_back({{"line", ds.rows[i].line}, {"measured", ds.rows[i].slowdown}, {"predicted", predicted[i]}});
    }
    write_output_file(o.json, j.dump(2) + "\n", "slowdown evaluation JSON");
  }
  return 0;
}

}  // namespace

Action add_slowdown(CLI::App& app) {
  auto t = std::make_shared<TrainOptions>();
  auto e = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("slowdown", "the learned compute-slowdown model under overlapping communication");
  cmd->require_subcommand(1);

  CLI::App* train = cmd->add_subcommand("train", "cross-validate, then train on every row and save the model");
  train->add_option("data", t->data, "dataset CSV (docs/SLOWDOWN-MODEL.md; tools/overlap-dataset writes it)")->required();
  train->add_option("--out", t->out, "model file to write (XGBoost JSON)")->required()->check(output_file());
  train->add_option("--folds", t->folds, "folds of the cross-validation")->capture_default_str();
  train->add_option("--seed", t->seed, "seed of the fold assignment")->capture_default_str();
  train->add_option("--rounds", t->booster.rounds, "boosting rounds (trees)")->capture_default_str();
  train->add_option("--max-depth", t->booster.max_depth, "depth of each tree")->capture_default_str();
  train->add_option("--eta", t->booster.eta, "learning rate")->capture_default_str();
  train->add_option("--json", t->json, "write the cross-validation results as JSON here")->check(output_file());

  CLI::App* eval = cmd->add_subcommand("eval", "accuracy on a dataset (within 5/10/15%, RMSE) and feature importance");
  eval->add_option("data", e->data, "dataset CSV")->required();
  eval->add_option("--model", e->model, "model file written by stepsim slowdown train")->required();
  eval->add_option("--json", e->json, "write accuracy, importance and every prediction as JSON here")->check(output_file());

  return [train, eval, t, e]() {
    t->booster.seed = t->seed;
    if (train->parsed()) return run_train(*t);
    if (eval->parsed()) return run_eval(*e);
    return -1;
  };
}

}  // namespace stepsim::cli
