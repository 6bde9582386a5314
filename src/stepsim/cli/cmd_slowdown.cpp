// stepsim slowdown train: k-fold cross-validate the XGBoost overlap-slowdown model on a dataset, then train it on
// every row and save it. stepsim slowdown eval: a saved model's accuracy on a dataset (Echo Table 6) and its
// feature importance (Echo Fig. 11). docs/SLOWDOWN-MODEL.md.
#include "stepsim/cli/cmd_slowdown.hpp"
#include "stepsim/io/utf8.hpp"

#include <iostream>
#include <memory>

#include "stepsim/api/slowdown.hpp"

namespace stepsim::cli {
namespace {

struct TrainArgs {
  api::SlowdownTrainOptions opt;
  std::string json;
};

struct EvalArgs {
  api::SlowdownEvalOptions opt;
  std::string json;
};

int run_train(const TrainArgs& a) {
  const api::SlowdownTrainOutput out = api::slowdown_train(a.opt);
  std::cout << out.text;
  if (!a.json.empty()) write_output_file(a.json, io::json_text(out.json, 2) + "\n", "slowdown training JSON");
  return 0;
}

int run_eval(const EvalArgs& a) {
  const api::SlowdownEvalOutput out = api::slowdown_eval(a.opt);
  std::cout << out.text;
  if (!a.json.empty()) write_output_file(a.json, io::json_text(out.json, 2) + "\n", "slowdown evaluation JSON");
  return 0;
}

}  // namespace

Action add_slowdown(CLI::App& app) {
  auto t = std::make_shared<TrainArgs>();
  auto e = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("slowdown", "the learned compute-slowdown model under overlapping communication");
  cmd->require_subcommand(1);

  CLI::App* train = cmd->add_subcommand("train", "cross-validate, then train on every row and save the model");
  train->add_option("data", t->opt.data, "dataset CSV (docs/SLOWDOWN-MODEL.md; tools/overlap-dataset writes it)")->required();
  train->add_option("--out", t->opt.out, "model file to write (XGBoost JSON)")->required()->check(output_file());
  train->add_option("--folds", t->opt.folds, "folds of the cross-validation")->capture_default_str();
  train->add_option("--seed", t->opt.seed, "seed of the fold assignment")->capture_default_str();
  train->add_option("--rounds", t->opt.booster.rounds, "boosting rounds (trees)")->capture_default_str();
  train->add_option("--max-depth", t->opt.booster.max_depth, "depth of each tree")->capture_default_str();
  train->add_option("--eta", t->opt.booster.eta, "learning rate")->capture_default_str();
  train->add_option("--json", t->json, "write the cross-validation results as JSON here")->check(output_file());

  CLI::App* eval = cmd->add_subcommand("eval", "accuracy on a dataset (within 5/10/15%, RMSE) and feature importance");
  eval->add_option("data", e->opt.data, "dataset CSV")->required();
  eval->add_option("--model", e->opt.model, "model file written by stepsim slowdown train")->required();
  eval->add_option("--json", e->json, "write accuracy, importance and every prediction as JSON here")->check(output_file());

  return [train, eval, t, e]() {
    if (train->parsed()) return run_train(*t);
    if (eval->parsed()) return run_eval(*e);
    return -1;
  };
}

}  // namespace stepsim::cli
