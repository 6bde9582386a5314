#pragma once
// `stepsim slowdown` as library calls (the CLI's cmd_slowdown.cpp): the learned compute-slowdown model under
// overlapping communication, k-fold cross-validated and trained on a dataset, or a saved model evaluated on one
// (Echo Table 6 and Fig. 11; docs/SLOWDOWN-MODEL.md).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/cost/overlap/learned/slowdown_report.hpp"
#include "stepsim/cost/overlap/learned/slowdown_training.hpp"

namespace stepsim::api {

struct SlowdownTrainOptions {
  std::string data;  // dataset CSV (tools/overlap-dataset writes it)
  std::string out;   // model file to write (XGBoost JSON)
  int folds = 5;
  uint64_t seed = 0;  // of the fold assignment (and recorded as the booster's)
  overlap::BoosterParams booster;
};

struct SlowdownTrainOutput {
  size_t rows = 0;
  overlap::CrossValidation cv;
  std::vector<std::string> gpus;  // the GPUs the saved model was trained on
  nlohmann::json json;            // what --json writes
  std::string text;               // the cross-validation table the CLI prints
};

// Cross-validates, trains on every row and saves the model to `out`; InputError for bad options or data.
SlowdownTrainOutput slowdown_train(const SlowdownTrainOptions& o);

struct SlowdownEvalOptions {
  std::string model;  // a model written by slowdown_train
  std::string data;   // dataset CSV
};

struct SlowdownEvalOutput {
  std::vector<double> predicted;  // per dataset row
  std::vector<overlap::LabelledAccuracy> by_gpu;
  std::vector<overlap::FeatureImportance> importance;  // ranked, largest share first
  nlohmann::json json;  // what --json writes
  std::string text;     // the accuracy and importance tables the CLI prints
};

SlowdownEvalOutput slowdown_eval(const SlowdownEvalOptions& o);

}  // namespace stepsim::api
