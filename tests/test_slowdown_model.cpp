// The learned overlap-slowdown model (docs/SLOWDOWN-MODEL.md): the dataset reader, the accuracy metrics on
// hand-checked numbers, seeded folds, that XGBoost recovers a known formula (tests/data/slowdown/make_synthetic.py),
// determinism, the model file, the simulator's factory, and the CLI's errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "stepsim/cost/overlap/learned/slowdown_dataset.hpp"
#include "stepsim/cost/overlap/learned/slowdown_features.hpp"
#include "stepsim/cost/overlap/learned/slowdown_metrics.hpp"
#include "stepsim/cost/overlap/learned/slowdown_report.hpp"
#include "stepsim/cost/overlap/learned/slowdown_training.hpp"
#include "stepsim/cost/overlap/learned/xgboost_overlap_model.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using namespace overlap;

const std::string kHeader =
    "gpu,kernel_type,isolated_us,sm_throughput_pct,memory_throughput_pct,dram_throughput_pct,achieved_occupancy_pct,"
    "l1_hit_rate_pct,l2_hit_rate_pct,collective,algorithm,protocol,bucket_bytes,channels,slowdown\n";

std::string synthetic_path() { return test::source_dir() + "/tests/data/slowdown/synthetic.csv"; }

const SlowdownDataset& synthetic() {
  static const SlowdownDataset ds = read_slowdown_csv(synthetic_path());
  return ds;
}

// Small and quick, enough for 400 rows of a smooth formula.
BoosterParams quick() {
  BoosterParams p;
  p.rounds = 150;
  p.max_depth = 5;
  return p;
}

std::string error_of(const std::string& text) {
  try {
    parse_slowdown_csv(text, "d.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(SlowdownDataset, ReadsEveryColumnWithUnitsAndMissingMetrics) {
  const auto ds = parse_slowdown_csv(
      "# comment\n" + kHeader +
          "NVIDIA H800, gemm, 120.5, 80, 40, 35.5, 60, , 70, alltoall, ring, ll128, 33554432, 16, 0.25\n"
          "A800,my_fused_kernel,7,,,,,,,sendrecv,,,1024,,-0.01\n",
      "d.csv");
  ASSERT_EQ(ds.rows.size(), 2u);
  const SlowdownRow& a = ds.rows[0];
  EXPECT_EQ(a.line, 3);
  EXPECT_EQ(a.gpu, "NVIDIA H800");
  EXPECT_EQ(a.kernel_type, "gemm");
  EXPECT_EQ(a.isolated_us, 120.5);
  EXPECT_EQ(a.sm_throughput_pct, 80);
  EXPECT_EQ(a.dram_throughput_pct, 35.5);
  EXPECT_TRUE(std::isnan(a.l1_hit_rate_pct));
  EXPECT_EQ(a.l2_hit_rate_pct, 70);
  EXPECT_EQ(a.collective, "all_to_all");
  EXPECT_EQ(a.algorithm, "ring");
  EXPECT_EQ(a.protocol, "LL128");
  EXPECT_EQ(a.bucket_bytes, 33554432u);
  EXPECT_EQ(a.channels, 16);
  EXPECT_EQ(a.slowdown, 0.25);
  const SlowdownRow& b = ds.rows[1];
  EXPECT_EQ(b.kernel_type, "my_fused_kernel");
  EXPECT_EQ(kernel_type_code(b.kernel_type), 9);  // "other"
  EXPECT_EQ(kernel_type_code("norm"), 4);
  EXPECT_EQ(b.collective, "sendrecv");
  EXPECT_EQ(collective_code(b.collective), 6);
  EXPECT_TRUE(b.algorithm.empty() && b.protocol.empty() && b.channels == 0);
  EXPECT_TRUE(std::isnan(algorithm_code(b.algorithm)));
  EXPECT_EQ(b.slowdown, -0.01);
  EXPECT_EQ(canonical_gpu(stepsim::catalog::shipped().gpus, a.gpu), "H800");  // catalog alias
  EXPECT_EQ(canonical_gpu(stepsim::catalog::shipped().gpus, "MI300X"), "MI300X");
}

TEST(SlowdownDataset, WriteThenReadGivesTheSameRows) {
  std::vector<SlowdownRow> rows(synthetic().rows.begin(), synthetic().rows.begin() + 20);
  rows[0].kernel = "void gemm<128, \"x\">, big";  // quoting
  rows[1].sm_throughput_pct = NAN;
  rows[2].channels = 0;
  rows[3].slowdown = 0.1 + 0.2;  // a double with no short decimal
  const SlowdownDataset back = parse_slowdown_csv(write_slowdown_csv(rows), "w.csv");
  ASSERT_EQ(back.rows.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(back.rows[i].kernel, rows[i].kernel);
    EXPECT_EQ(back.rows[i].isolated_us, rows[i].isolated_us);
    EXPECT_EQ(back.rows[i].slowdown, rows[i].slowdown);
    EXPECT_EQ(back.rows[i].channels, rows[i].channels);
    EXPECT_EQ(std::isnan(back.rows[i].sm_throughput_pct), std::isnan(rows[i].sm_throughput_pct));
  }
}

TEST(SlowdownDataset, ErrorsNameFileLineColumnAndRule) {
  const std::string ok = "H800,gemm,10,50,50,50,50,50,50,all_reduce,ring,Simple,1048576,8,0.2\n";
  EXPECT_EQ(error_of(kHeader + ok + "H800,gemm,abc,50,50,50,50,50,50,all_reduce,ring,Simple,1048576,8,0.2\n"),
            "d.csv:3: column isolated_us: 'abc' is not a number");
  EXPECT_EQ(error_of(kHeader + "H800,gemm,10,150,50,50,50,50,50,all_reduce,ring,Simple,1048576,8,0.2\n"),
            "d.csv:2: column sm_throughput_pct: '150' is out of range [0, 100]");
  EXPECT_EQ(error_of(kHeader + "H800,gemm,0,50,50,50,50,50,50,all_reduce,ring,Simple,1048576,8,0.2\n"),
            "d.csv:2: column isolated_us: '0' is out of range (0, 1e+09]");
  EXPECT_EQ(error_of(kHeader + "H800,gemm,10,50,50,50,50,50,50,all_reduce,ring,Simple,1048576,8,-1\n"),
            "d.csv:2: column slowdown: '-1' is out of range (-1, 1000]");
  EXPECT_EQ(error_of(kHeader + "H800,gemm,10,50,50,50,50,50,50,allreduc,ring,Simple,1048576,8,0.2\n"),
            "d.csv:2: column collective: 'allreduc' is not all_reduce, all_gather, reduce_scatter, all_to_all, "
            "broadcast, reduce or sendrecv");
  EXPECT_EQ(error_of(kHeader + "H800,gemm,10,50,50,50,50,50,50,all_reduce,ring,LL64,1048576,8,0.2\n"),
            "d.csv:2: column protocol: 'LL64' is not LL, LL128, Simple or empty");
  EXPECT_EQ(error_of(kHeader + "H800,gemm,10,50,50,50,50,50,50,all_reduce,ring,Simple,1.5,8,0.2\n"),
            "d.csv:2: column bucket_bytes: '1.5' is not a whole number");
  EXPECT_EQ(error_of(kHeader + "H800,gemm,10,50,50,50,50,50,50,all_reduce,ring,Simple,1048576,0,0.2\n"),
            "d.csv:2: column channels: '0' is out of range [1, 1024]");
  EXPECT_EQ(error_of(kHeader + "H800,gemm,10\n"), "d.csv:2: 3 fields, the header has 15");
  EXPECT_EQ(error_of(kHeader + "\"H800,gemm\n"), "d.csv:2: unterminated quote");
  EXPECT_EQ(error_of("gpu,kernel_typo\n"),
            "d.csv:1: header column 2 'kernel_typo' is not a dataset column (docs/SLOWDOWN-MODEL.md)");
  EXPECT_EQ(error_of("gpu,gpu\n"), "d.csv:1: header column 2 'gpu' appears twice");
  EXPECT_EQ(error_of("gpu,kernel_type\n"), "d.csv:1: header lacks the required column 'isolated_us'");
  EXPECT_EQ(error_of(kHeader), "d.csv: no data rows after the header");
  EXPECT_EQ(error_of("# only a comment\n"), "d.csv: no header line (docs/SLOWDOWN-MODEL.md lists the columns)");
  EXPECT_EQ(error_of(std::string("gpu\0", 4)), "d.csv: binary data, not a slowdown dataset CSV");
  EXPECT_EQ(error_of(std::string(kMaxDatasetBytes + 1, '\n')),
            "d.csv: slowdown dataset is 67108865 bytes, more than the limit of 67108864");
  try {
    read_slowdown_csv("/nonexistent/d.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/d.csv: cannot read slowdown dataset: no such file");
  }
}

// Four predictions checked by hand. Measured factors 1+s: 1, 1.5, 2, 1.2; predicted 1.03, 1.62, 2.12, 1.5:
// relative errors 3%, 8%, 6%, 25%; errors of s 0.03, 0.12, 0.12, 0.3.
TEST(SlowdownMetrics, HandCheckedWithinSharesAndRmse) {
  const std::vector<double> measured = {0.0, 0.5, 1.0, 0.2};
  const std::vector<double> predicted = {0.03, 0.62, 1.12, 0.5};
  const SlowdownAccuracy a = slowdown_accuracy(measured, predicted);
  EXPECT_EQ(a.rows, 4u);
  EXPECT_DOUBLE_EQ(a.within_5, 0.25);   // 3%
  EXPECT_DOUBLE_EQ(a.within_10, 0.75);  // 3%, 8%, 6%
  EXPECT_DOUBLE_EQ(a.within_15, 0.75);
  EXPECT_NEAR(a.rmse, std::sqrt((0.0009 + 0.0144 + 0.0144 + 0.09) / 4), 1e-12);  // 0.17299
  // Exactly on the boundary counts as within: 1.05 vs 1.
  EXPECT_DOUBLE_EQ(slowdown_accuracy(std::vector<double>{0.0}, std::vector<double>{0.05}).within_5, 1.0);
  EXPECT_EQ(accuracy_table("gpu", {{"H800", a}}),
            "gpu                  rows  within 5% within 10% within 15%      RMSE\n"
            "H800                    4     25.00%     75.00%     75.00%    0.1730\n");
}

TEST(SlowdownTraining, FoldsAreSeededBalancedAndCoverEveryRow) {
  const std::vector<int> f = assign_folds(23, 5, 7);
  std::vector<int> size(5, 0);
  for (int k : f) {
    ASSERT_TRUE(k >= 0 && k < 5);
    ++size[k];
  }
  EXPECT_EQ(size, (std::vector<int>{5, 5, 5, 4, 4}));  // 23 = 5+5+5+4+4, dealt round-robin
  EXPECT_EQ(assign_folds(23, 5, 7), f);
  EXPECT_NE(assign_folds(23, 5, 8), f);
}

// A constant slowdown: every fold's model must predict it, so each fold and the pooled result are exact.
TEST(SlowdownTraining, CrossValidationOfAConstantIsExact) {
  std::vector<SlowdownRow> rows(synthetic().rows.begin(), synthetic().rows.begin() + 10);
  for (auto& r : rows) r.slowdown = 0.25;
  const CrossValidation cv = cross_validate(stepsim::catalog::shipped().gpus, rows, 5, 1, quick());
  ASSERT_EQ(cv.folds.size(), 5u);
  size_t tested = 0;
  for (const auto& f : cv.folds) {
    EXPECT_EQ(f.train_rows, 8u);
    EXPECT_EQ(f.test.rows, 2u);
    tested += f.test.rows;
  }
  EXPECT_EQ(tested, rows.size());
  EXPECT_EQ(cv.overall.rows, 10u);
  EXPECT_DOUBLE_EQ(cv.overall.within_5, 1.0);
  EXPECT_LT(cv.overall.rmse, 1e-6);
  for (double p : cv.predicted) EXPECT_NEAR(p, 0.25, 1e-6);
}

struct HeldOut {
  std::vector<SlowdownRow> train, test;
};

HeldOut split_every_fifth() {
  HeldOut h;
  for (size_t i = 0; i < synthetic().rows.size(); ++i) (i % 5 == 0 ? h.test : h.train).push_back(synthetic().rows[i]);
  return h;
}

// Never destroyed: freeing a booster from a static destructor at exit can run after libxgboost's own statics are
// gone (a crash after the test passed).
const SlowdownModel& synthetic_model() {
  static const SlowdownModel* m = new SlowdownModel(train_slowdown_model(stepsim::catalog::shipped().gpus, split_every_fifth().train, quick()));
  return *m;
}

// make_synthetic.py's formula is a smooth function of dram, channels, protocol, bucket, sm and gpu; on rows the
// model never saw it must land within 15% for >90% of them, where predicting the training mean does far worse.
TEST(SlowdownModel, LearnsTheSyntheticFormulaOnHeldOutRows) {
  const HeldOut h = split_every_fifth();
  ASSERT_EQ(h.train.size(), 400u);
  ASSERT_EQ(h.test.size(), 100u);
  std::vector<double> measured;
  double mean = 0;
  for (const auto& r : h.train) mean += r.slowdown / static_cast<double>(h.train.size());
  for (const auto& r : h.test) measured.push_back(r.slowdown);
  const SlowdownAccuracy model = slowdown_accuracy(measured, synthetic_model().predict(stepsim::catalog::shipped().gpus, h.test));
  const SlowdownAccuracy baseline = slowdown_accuracy(measured, std::vector<double>(measured.size(), mean));
  EXPECT_GT(model.within_15, 0.90);
  EXPECT_LT(baseline.within_15, 0.60);
  EXPECT_LT(model.rmse, 0.5 * baseline.rmse);  // 0.156 vs 0.426: the few large slowdowns are the hard part
  EXPECT_EQ(synthetic_model().gpus(), (std::vector<std::string>{"A800", "H800"}));
}

// The formula uses dram, channels, protocol, bucket, sm and the GPU; isolated time, occupancy, cache hit rates,
// kernel type, collective and algorithm carry no signal and must get little of the gain.
TEST(SlowdownModel, ImportanceFavoursTheFormulasFeatures) {
  const auto imp = ranked_importance(synthetic_model().importance());
  ASSERT_EQ(imp.size(), static_cast<size_t>(kNumFeatures));
  double total = 0, noise = 0;
  for (const auto& e : imp) total += e.total_gain;
  for (const auto& e : imp) {
    const std::set<std::string> noise_features = {"isolated_us", "achieved_occupancy_pct", "l1_hit_rate_pct",
                                                  "l2_hit_rate_pct", "kernel_type", "collective", "algorithm"};
    if (noise_features.count(e.feature)) noise += e.total_gain / total;
  }
  EXPECT_LT(noise, 0.10) << importance_table(imp);
  // channels scales both terms of the formula; dram (and memory throughput, its correlated twin) the larger one.
  EXPECT_EQ(imp[0].feature, "channels") << importance_table(imp);
  double memory = 0;
  for (const auto& e : imp) {
    if (e.feature == "dram_throughput_pct" || e.feature == "memory_throughput_pct") memory += e.total_gain / total;
  }
  EXPECT_GT(memory, 0.10) << importance_table(imp);
}

TEST(SlowdownModel, SameSeedSameModelBytes) {
  const HeldOut h = split_every_fifth();
  const std::vector<SlowdownRow> rows(h.train.begin(), h.train.begin() + 100);
  EXPECT_EQ(train_slowdown_model(stepsim::catalog::shipped().gpus, rows, quick()).bytes(), train_slowdown_model(stepsim::catalog::shipped().gpus, rows, quick()).bytes());
  const CrossValidation a = cross_validate(stepsim::catalog::shipped().gpus, rows, 4, 3, quick()), b = cross_validate(stepsim::catalog::shipped().gpus, rows, 4, 3, quick());
  EXPECT_EQ(a.predicted, b.predicted);
}

TEST(SlowdownModel, SaveLoadKeepsPredictionsAndGpus) {
  const std::string path = test::temp_dir() + "model.json";
  synthetic_model().save(path);
  const SlowdownModel back = SlowdownModel::load(path);
  EXPECT_EQ(back.gpus(), synthetic_model().gpus());
  EXPECT_EQ(back.predict(stepsim::catalog::shipped().gpus, synthetic().rows), synthetic_model().predict(stepsim::catalog::shipped().gpus, synthetic().rows));
  EXPECT_NE(back.training_note().find("\"rows\":400"), std::string::npos) << back.training_note();
}

// The simulator's path: compute/comm structs encode like the equivalent dataset row, and several comms add up.
TEST(SlowdownModel, FactoryPredictsLikeTheDatasetRowAndSumsComms) {
  const std::string path = test::temp_dir() + "model-factory.json";
  synthetic_model().save(path);
  const auto model = load_xgboost_overlap_model(stepsim::catalog::shipped().gpus, path, "NVIDIA H800");  // an alias of the catalog's H800

  SlowdownRow row;
  row.gpu = "H800";
  row.kernel_type = "gemm";
  row.isolated_us = 250;
  row.sm_throughput_pct = 70;
  row.dram_throughput_pct = 60;
  row.memory_throughput_pct = 65;
  row.collective = "reduce_scatter";
  row.algorithm = "ring";
  row.protocol = "Simple";
  row.bucket_bytes = 64u << 20;
  row.channels = 24;
  cost::OverlapCompute c;
  c.category = workload::ComputeCategory::Gemm;
  c.isolated_us = 250;
  c.sm_throughput_pct = 70;
  c.dram_throughput_pct = 60;
  c.memory_throughput_pct = 65;
  cost::OverlapComm comm;
  comm.coll = workload::CollType::ReduceScatter;
  comm.algorithm = cost::Algorithm::Ring;
  comm.protocol = cost::Protocol::Simple;
  comm.bytes = 64u << 20;
  comm.channels = 24;
  const FeatureVector from_row = features_of(row, 1), from_sim = features_of(c, comm, 1);
  for (int i = 0; i < kNumFeatures; ++i) {
    EXPECT_TRUE(from_row[i] == from_sim[i] || (std::isnan(from_row[i]) && std::isnan(from_sim[i])))
        << feature_names()[i] << ": " << from_row[i] << " vs " << from_sim[i];
  }
  const double one = model->compute_slowdown(c, std::span<const cost::OverlapComm>(&comm, 1));
  EXPECT_EQ(one, synthetic_model().predict(stepsim::catalog::shipped().gpus, {row}).front());
  // The formula gives 0.05 + 2*0.6*0.75*1*1 + 0.5*0.7*0.75 = 1.1625 for this pair on an H800.
  EXPECT_NEAR(one, 1.1625, 0.15 * 2.1625);
  cost::OverlapComm small = comm;
  small.protocol = cost::Protocol::LL;
  small.channels = 2;
  const std::vector<cost::OverlapComm> both = {comm, small};
  const double two = model->compute_slowdown(c, both);
  EXPECT_DOUBLE_EQ(two, one + model->compute_slowdown(c, std::span<const cost::OverlapComm>(&small, 1)));
  EXPECT_EQ(model->compute_slowdown(c, both), two);  // cached: the same answer
}

std::string load_error(const std::string& path, const std::string& gpu = "H800") {
  try {
    load_xgboost_overlap_model(stepsim::catalog::shipped().gpus, path, gpu);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(SlowdownModel, LoadErrorsNameThePath) {
  EXPECT_EQ(load_error("/nonexistent/m.json"), "/nonexistent/m.json: cannot read slowdown model: no such file");
  const std::string garbage = test::write_temp("garbage.json", "this is not a model\n");
  EXPECT_EQ(load_error(garbage), garbage + ": not an XGBoost JSON model (it does not start with '{')");
  const std::string bad_json = test::write_temp("bad.json", "{\"learner\": [1, 2\n");
  EXPECT_EQ(load_error(bad_json).rfind(bad_json + ": not an XGBoost model: ", 0), 0u) << load_error(bad_json);
  EXPECT_EQ(load_error(bad_json).find('\n'), std::string::npos);
  const std::string empty = test::write_temp("empty.json", " \n");
  EXPECT_EQ(load_error(empty), empty + ": not an XGBoost JSON model (empty file)");
  // A genuine XGBoost model without stepsim's attributes.
  std::vector<FeatureVector> x(4);
  for (size_t i = 0; i < x.size(); ++i) x[i].fill(static_cast<float>(i));
  const std::string plain = test::write_temp("plain.json", Booster::train(x, {0, 1, 2, 3}, quick()).save_json());
  EXPECT_EQ(load_error(plain), plain + ": an XGBoost model but not a stepsim slowdown model (no stepsim_model attribute)");
  const std::string path = test::temp_dir() + "model-gpus.json";
  synthetic_model().save(path);
  EXPECT_EQ(load_error(path, "H100"), path + ": slowdown model was trained on A800, H800, not on H100-SXM; collect its "
                                             "dataset (tools/overlap-dataset) and retrain");
}

// CLI: only once `slowdown` is registered in cli/main.cpp.
// (CLI11 answers --help before it rejects an unknown word, so ask the top-level help for the command instead.)
bool cli_has_slowdown() { return test::run_cli("--help").output.find("slowdown") != std::string::npos; }

int lines_of(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(SlowdownCli, TrainThenEvalPrintTable6AndImportance) {
  if (!cli_has_slowdown()) GTEST_SKIP() << "stepsim slowdown is not registered in src/stepsim/cli/main.cpp";
  const std::string dir = test::temp_dir();
  const auto t = test::run_cli("slowdown train " + synthetic_path() + " --out " + dir + "m.json --folds 3 --rounds 60" +
                               " --json " + dir + "cv.json");
  ASSERT_EQ(t.code, 0) << t.output;
  EXPECT_NE(t.output.find("fold 3"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("all (held-out)        500"), std::string::npos) << t.output;
  const auto cv = nlohmann::json::parse(test::read_file(dir + "cv.json"));
  EXPECT_EQ(cv["cv_folds"].size(), 3u);
  EXPECT_EQ(cv["cv_overall"]["rows"], 500);
  const auto e = test::run_cli("slowdown eval --model " + dir + "m.json " + synthetic_path() + " --json " + dir + "e.json");
  ASSERT_EQ(e.code, 0) << e.output;
  EXPECT_NE(e.output.find("within 15%"), std::string::npos);
  EXPECT_NE(e.output.find("dram_throughput_pct"), std::string::npos);
  const auto ej = nlohmann::json::parse(test::read_file(dir + "e.json"));
  EXPECT_EQ(ej["accuracy"].back()["gpu"], "all");
  EXPECT_EQ(ej["predictions"].size(), 500u);
}

TEST(SlowdownCli, BadInputExitsTwoWithOneLine) {
  if (!cli_has_slowdown()) GTEST_SKIP() << "stepsim slowdown is not registered in src/stepsim/cli/main.cpp";
  const std::string bad = test::write_temp("bad.csv", kHeader + "H800,gemm,10,50,50,50,50,50,50,all_reduce,ring,x,1,8,0.2\n");
  const std::string dir = test::temp_dir();
  for (const std::string& args :
       {"slowdown train " + bad + " --out " + dir + "x.json",
        "slowdown train " + synthetic_path() + " --out " + dir + "x.json --folds 1",
        "slowdown train " + synthetic_path() + " --out " + dir + "x.json --max-depth 0",
        "slowdown eval --model /nonexistent/m.json " + synthetic_path(),
        "slowdown eval --model " + bad + " " + synthetic_path()}) {
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
    EXPECT_EQ(lines_of(r.output), 1) << args << "\n" << r.output;
  }
  EXPECT_NE(test::run_cli("slowdown train " + bad + " --out " + dir + "x.json").output.find(bad + ":2: column protocol"),
            std::string::npos);
}

}  // namespace
}  // namespace stepsim
