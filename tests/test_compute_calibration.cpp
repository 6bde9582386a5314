// Compute-model calibration (issue 13 items 2-4): the sustained-clock fit on runs whose response is known in closed
// form, the residual band, the store round trip, and a simulation that uses the stored clock and reports its
// step-time interval.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <sqlite3.h>

#include "stepsim/catalog/efficiency_table.hpp"
#include "stepsim/calibrate/calibration_store.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/validate/compute_fit.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using validate::RunResponse;

hw::ComputeCalibrationRow hopper_row(double clock, double attention_scale = 1.0) {
  hw::ComputeCalibrationRow row;
  row.arch = "hopper";
  row.sustained_clock = clock;
  row.attention_scale = attention_scale;
  row.source = "test";
  row.created = "2026-11-25T00:00:00Z";
  return row;
}

// A fresh store at `path` holding `rows` (the last one is the newest).
void fresh_store(const std::string& path, const std::vector<hw::ComputeCalibrationRow>& rows) {
  std::filesystem::remove(path);
  hw::CalibrationStore s = hw::CalibrationStore::open(path);
  for (const auto& r : rows) s.insert_compute(r);
}

TEST(ComputeCalibration, FitRecoversTheClockOfRunsThatScaleWithCompute) {
  // Three runs of pure compute (a = 0) measured 1/0.8 slower than predicted at clock 1: the fit is 0.8 exactly.
  const std::vector<RunResponse> runs = {
      {"r1", "hopper", 1.0 / 0.8, 0.0, 1.0}, {"r3", "hopper", 3.0 / 0.8, 0.0, 3.0}, {"r10", "hopper", 10.0 / 0.8, 0.0, 10.0}};
  EXPECT_NEAR(validate::fit_sustained_clock(runs), 0.8, 1e-9);
  // A run with a fixed part: step(k) = 2 + 1/k, measured 4.5 -> k = 0.4.
  EXPECT_NEAR(validate::fit_sustained_clock({{"x", "ampere", 4.5, 2.0, 1.0}}), 0.4, 1e-9);
}

TEST(ComputeCalibration, FitIsTheMedianInLogSpace) {
  // Mean |log error| is minimised at the median of the runs' own clocks (0.5, 0.7, 0.9 -> 0.7).
  const std::vector<RunResponse> runs = {
      {"k5", "ampere", 1.0 / 0.5, 0.0, 1.0}, {"k9", "ampere", 1.0 / 0.9, 0.0, 1.0}, {"k7", "ampere", 1.0 / 0.7, 0.0, 1.0}};
  EXPECT_NEAR(validate::fit_sustained_clock(runs), 0.7, 1e-9);
}

TEST(ComputeCalibration, JointFitRecoversClockAndAttentionScale) {
  // Runs measured at clock 0.8 and attention scale 0.7 (step = a + b/k + c/(k s)), with attention shares 0, 5/6
  // and 1/2: the two are told apart only because the shares differ; the grid holds both values exactly.
  auto measured = [](double a, double b, double c) { return a + b / 0.8 + c / (0.8 * 0.7); };
  std::vector<RunResponse> runs = {{"gemm", "hopper", measured(0.1, 1.0, 0.0), 0.1, 1.0, 0.0},
                                   {"long", "hopper", measured(0.0, 0.2, 1.0), 0.0, 0.2, 1.0},
                                   {"half", "hopper", measured(0.2, 1.0, 1.0), 0.2, 1.0, 1.0}};
  const validate::ClockAndScale f = validate::fit_clock_and_scale(runs, true);
  EXPECT_NEAR(f.sustained_clock, 0.8, 1e-9);
  EXPECT_NEAR(f.attention_scale, 0.7, 1e-9);
  // Not fitted: the scale stays 1 and the clock absorbs what it can.
  EXPECT_DOUBLE_EQ(validate::fit_clock_and_scale(runs, false).attention_scale, 1.0);
  // Runs without attention time leave the scale at 1 even when asked to fit it (a flat loss keeps 1).
  for (auto& r : runs) {
    r.c = 0;
    r.measured = r.a + r.b / 0.8;
  }
  const validate::ClockAndScale flat = validate::fit_clock_and_scale(runs, true);
  EXPECT_DOUBLE_EQ(flat.attention_scale, 1.0);
  EXPECT_NEAR(flat.sustained_clock, 0.8, 1e-9);
}

TEST(ComputeCalibration, QuantilesInterpolate) {
  EXPECT_DOUBLE_EQ(validate::quantile({-0.2, 0.0, 0.1, 0.3, -0.1}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(validate::quantile({0.0, 1.0}, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(validate::quantile({}, 0.9), 0.0);
}

TEST(ComputeCalibration, EachKindGetsTheBandOfItsOwnRuns) {
  // Six dense runs and two MoE runs. Dense: sorted -0.10 -0.05 0 0.02 0.04 0.08; 10th percentile at position 0.5 ->
  // -0.075, 90th at 4.5 -> 0.06. MoE (2 < 5 runs): the architecture's band [-0.12, 0.07] widened to -0.30 and kept
  // at 0.07 (the other MoE error, -0.2, is inside).
  const std::vector<double> errors = {0.0, -0.3, 0.02, -0.1, 0.08, -0.2, 0.04, -0.05};
  const std::vector<std::string> kinds = {"dense", "moe", "dense", "dense", "dense", "moe", "dense", "dense"};
  const hw::KindIntervals k = validate::kind_intervals(errors, kinds, -0.12, 0.07);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k.at("dense").runs, 6);
  EXPECT_NEAR(k.at("dense").low, -0.075, 1e-12);
  EXPECT_NEAR(k.at("dense").high, 0.06, 1e-12);
  EXPECT_EQ(k.at("moe").runs, 2);
  EXPECT_DOUBLE_EQ(k.at("moe").low, -0.3);
  EXPECT_DOUBLE_EQ(k.at("moe").high, 0.07);
  // No MoE run: no MoE entry (the simulation then falls back to the architecture's band).
  EXPECT_EQ(validate::kind_intervals({0.1}, {"dense"}, -0.1, 0.1).count("moe"), 0u);
}

TEST(ComputeCalibration, AJobGetsItsKindsBandFromTheShippedTableAndTheStore) {
  // data/efficiency.yaml: Hopper's dense band rests on 16 runs, its MoE band on one (the architecture's widened).
  const cost::EfficiencyTable hopper = stepsim::catalog::shipped().efficiency.resolve_arch("hopper");
  ASSERT_EQ(hopper.prediction_interval_by_kind.count("moe"), 1u);
  const hw::KindInterval moe_band = hopper.prediction_interval_by_kind.at("moe");
  EXPECT_EQ(moe_band.runs, 1);
  const std::string dense_yaml = test::small_gpt_yaml(1, 1, 8, 8, "", "", ", calibration_store: none");
  const std::string moe_yaml =
      "model: {name: m, num_layers: 2, hidden_size: 1024, num_attention_heads: 16, ffn_hidden_size: 4096,"
      " vocab_size: 32000, seq_length: 1024, moe: {num_experts: 8, topk: 2, ffn_hidden_size: 1024}}\n"
      // CUDA graphs: this small MoE layer would be host-bound in eager mode, which widens the upper end beyond the
      // band (tests/test_moe_host_note.cpp); here only the band is under test.
      "parallelism: {data: 8, expert: 8}\ntraining: {micro_batch_size: 1, global_batch_size: 8, cuda_graphs: true}\n"
      "cluster: {gpu: H100-SXM, num_gpus: 8, gpus_per_node: 8}\n";
  const spec::JobSpec dense = test::job_from_yaml(dense_yaml);
  const spec::JobSpec moe = test::job_from_yaml(moe_yaml + "simulation: {calibration_store: none}\n");
  EXPECT_EQ(sim::calibration_kind(dense), "dense");
  EXPECT_EQ(sim::calibration_kind(moe), "moe");
  // The shipped calibration's band is at least new_source_interval's (what a run from a source never seen can expect):
  // Hopper's MoE band [-0.167, +0.090] and [-0.241, +0.076] give [-0.241, +0.090].
  ASSERT_TRUE(hopper.new_source_interval.has_value());
  const hw::NewSourceInterval g = *hopper.new_source_interval;
  const double low = std::min(moe_band.low, g.low), high = std::max(moe_band.high, g.high);
  const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), moe, {0});
  ASSERT_TRUE(s.calibration.interval.has_value());
  EXPECT_DOUBLE_EQ((*s.calibration.interval)[0], low);
  EXPECT_DOUBLE_EQ((*s.calibration.interval)[1], high);
  EXPECT_EQ(s.calibration.interval_sources, g.sources);
  const report::Summary sum = report::summarize(s, 0);
  EXPECT_DOUBLE_EQ((*sum.step_time_interval_s)[1], sum.step_time_s / (1 + low));
  const std::string said = "errors of 1 moe run (too few for a percentile) and of " + std::to_string(g.sources) +
                           " sources weighted equally (a new source))";
  EXPECT_NE(report::to_text(sum, moe).find(said), std::string::npos) << report::to_text(sum, moe);
  const auto j = report::to_json(sum, moe);
  EXPECT_EQ(j["step_time_interval_basis"]["kind"], "moe");
  EXPECT_EQ(j["step_time_interval_basis"]["runs"], 1);
  EXPECT_EQ(j["step_time_interval_basis"]["new_source_sources"], g.sources);
  sim::ComputeCalibration dc;
  sim::make_compute_model(stepsim::catalog::shipped(), dense, &dc);
  EXPECT_EQ(dc.interval_kind, "dense");
  EXPECT_EQ(dc.interval_runs, hopper.prediction_interval_by_kind.at("dense").runs);

  // A store row with per-kind bands: the MoE job takes the store's MoE band. A row without one for the job's kind
  // gives the row's band over all its runs (kind empty, runs 0).
  const std::string store = test::temp_dir() + "/kinds.sqlite";
  hw::ComputeCalibrationRow row = hopper_row(0.8);
  row.interval_low = -0.1;
  row.interval_high = 0.1;
  row.kind_intervals["moe"] = hw::KindInterval{-0.4, 0.05, 7};
  fresh_store(store, {row});
  const auto back = hw::CalibrationStore::open_existing(store)->lookup_compute("hopper");
  ASSERT_EQ(back->kind_intervals.size(), 1u);
  EXPECT_DOUBLE_EQ(back->kind_intervals.at("moe").low, -0.4);
  EXPECT_EQ(back->kind_intervals.at("moe").runs, 7);
  sim::ComputeCalibration mc;
  sim::make_compute_model(stepsim::catalog::shipped(), test::job_from_yaml(moe_yaml + "simulation: {calibration_store: " + store + "}\n"), &mc);
  EXPECT_DOUBLE_EQ((*mc.interval)[0], -0.4);
  EXPECT_DOUBLE_EQ((*mc.interval)[1], 0.05);  // a store's band is the user's own runs': not widened to new sources
  EXPECT_EQ(mc.interval_runs, 7);
  EXPECT_EQ(mc.interval_sources, 0);
  sim::ComputeCalibration dc2;
  sim::make_compute_model(stepsim::catalog::shipped(), test::job_from_yaml(test::small_gpt_yaml(1, 1, 8, 8, "", "", ", calibration_store: " + store)),
                          &dc2);
  EXPECT_DOUBLE_EQ((*dc2.interval)[0], -0.1);
  EXPECT_EQ(dc2.interval_runs, 0);
  EXPECT_EQ(dc2.interval_kind, "");
}

// The InputError data/efficiency.yaml gives with `anchor` (one line of it) replaced by `replacement`; "" when it
// loads, "anchor not found" when the shipped file no longer has that line.
std::string efficiency_error_with(const std::string& dir_name, const std::string& anchor, const std::string& replacement) {
  const std::string dir = test::temp_dir() + dir_name + "/";
  std::filesystem::create_directories(dir);
  std::string text = test::read_file(test::source_dir() + "/data/efficiency.yaml");
  const size_t at = text.find(anchor);
  if (at == std::string::npos) return "anchor not found";
  text.replace(at, anchor.size(), replacement);
  const std::string path = dir + "efficiency.yaml";
  std::ofstream(path, std::ios::trunc) << text;
  try {
    (void)cost::EfficiencyCatalog::load(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ComputeCalibration, KindBandsInTheEfficiencyFileAreChecked) {
  auto error_with = [](const std::string& band) {
    return efficiency_error_with("kind-bands", "    prediction_interval_by_kind: {dense: {interval: [-0.053, 0.024], runs: 10}}",
                                 "    prediction_interval_by_kind: " + band);
  };
  EXPECT_EQ(error_with("{dense: {interval: [-0.053, 0.024], runs: 10}}"), "");
  EXPECT_NE(error_with("{sparse: {interval: [-0.1, 0.1], runs: 2}}").find("prediction_interval_by_kind.sparse: unknown key"),
            std::string::npos);
  EXPECT_NE(error_with("{moe: {interval: [0.1, -0.1], runs: 2}}").find("prediction_interval_by_kind.moe.interval: needs"),
            std::string::npos);
  EXPECT_NE(error_with("{moe: {interval: [-0.1, 0.1], runs: 0}}").find("prediction_interval_by_kind.moe.runs: must be"),
            std::string::npos);
  EXPECT_NE(error_with("{moe: {interval: [-0.1, 0.1]}}").find("prediction_interval_by_kind.moe.runs: missing"),
            std::string::npos);
}

TEST(ComputeCalibration, FrameworkBandsInTheEfficiencyFileAreChecked) {
  auto error_with = [](const std::string& entry) {
    return efficiency_error_with("framework-bands",
                                 "      torchtitan: {interval: [-0.090, 0.050], runs: 18, power_limit_W: 500}",
                                 "      " + entry);
  };
  EXPECT_EQ(error_with("torchtitan: {interval: [-0.090, 0.050], runs: 18, power_limit_W: 500}"), "");
  EXPECT_EQ(error_with("torchtitan: {interval: [-0.090, 0.050], runs: 18}"), "");  // at the board's default power
  EXPECT_NE(error_with("torchtitan: {interval: [-0.1, 0.1], runs: 3, power_limit_W: 0}")
                .find("prediction_interval_by_framework.torchtitan.power_limit_W: must be in (0, 5000] W, got 0"),
            std::string::npos);
  // Only a framework a job can name has a band (composer is refused in job files).
  EXPECT_NE(error_with("deepspeed: {interval: [-0.4, 0.1], runs: 3}").find("appears twice"), std::string::npos);
  EXPECT_NE(error_with("composer: {interval: [-0.4, 0.1], runs: 3}").find("prediction_interval_by_framework.composer: unknown key"),
            std::string::npos);
  EXPECT_NE(error_with("torchtitan: {interval: [-0.1, 0.1], runs: 0}").find("prediction_interval_by_framework.torchtitan.runs: must be"),
            std::string::npos);
}

TEST(ComputeCalibration, TheNewSourceBandInTheEfficiencyFileIsChecked) {
  auto error_with = [](const std::string& entry) {
    return efficiency_error_with("new-source", "  new_source_interval: {interval: [-0.244, 0.077], sources: 20, runs: 137}",
                                 "  new_source_interval: " + entry);
  };
  EXPECT_EQ(error_with("{interval: [-0.244, 0.077], sources: 20, runs: 137}"), "");
  // It must hold the prediction (an interval of a new source's errors around 0) and say on what it rests.
  EXPECT_NE(error_with("{interval: [0.05, 0.1], sources: 2, runs: 3}")
                .find("new_source_interval.interval: needs -1 < low <= 0 <= high < 10, got [0.05, 0.1]"),
            std::string::npos);
  EXPECT_NE(error_with("{interval: [-0.1, 0.1], runs: 3}").find("new_source_interval.sources: missing"),
            std::string::npos);
  EXPECT_NE(error_with("{interval: [-0.1, 0.1], sources: 2, runs: 1.5}").find("new_source_interval.runs: must be a whole"),
            std::string::npos);
  EXPECT_NE(error_with("{interval: [-0.1, 0.1], sources: 2, runs: 3, spread: 1}").find("new_source_interval.spread"),
            std::string::npos);
}

TEST(ComputeCalibration, SimulationUsesTheStoredClockAndReportsItsInterval) {
  const std::string store = test::temp_dir() + "/compute.sqlite";
  hw::ComputeCalibrationRow row = hopper_row(0.5);
  row.runs = 3;
  row.interval_low = -0.1;
  row.interval_high = 0.25;
  hw::ComputeCalibrationRow newer = row;
  newer.sustained_clock = 0.6;  // newer row wins
  fresh_store(store, {row, newer});
  std::string yaml = test::small_gpt_yaml(1, 1, 1, 4);
  const spec::JobSpec at1 = test::job_from_yaml(test::with_simulation(yaml, "calibration_store: none, sustained_clock: 1.0"));
  const spec::JobSpec stored = test::job_from_yaml(test::with_simulation(yaml, "calibration_store: " + store));
  sim::ComputeCalibration cal;
  sim::make_compute_model(stepsim::catalog::shipped(), stored, &cal);
  EXPECT_DOUBLE_EQ(cal.sustained_clock, 0.6);
  EXPECT_EQ(cal.source, "store " + store);
  const sim::Simulation a = sim::run_simulation(stepsim::catalog::shipped(), at1, {0});
  const sim::Simulation b = sim::run_simulation(stepsim::catalog::shipped(), stored, {0});
  EXPECT_GT(b.result.step_ns, a.result.step_ns);  // a slower clock, a longer step
  const report::Summary sa = report::summarize(a, 0), sb = report::summarize(b, 0);
  EXPECT_FALSE(sa.step_time_interval_s.has_value());  // a clock the user chose has no residuals
  ASSERT_TRUE(sb.step_time_interval_s.has_value());
  // measured = predicted / (1 + error): [T / 1.25, T / 0.9].
  EXPECT_DOUBLE_EQ((*sb.step_time_interval_s)[0], sb.step_time_s / 1.25);
  EXPECT_DOUBLE_EQ((*sb.step_time_interval_s)[1], sb.step_time_s / 0.9);
  const auto j = report::to_json(sb, stored);
  EXPECT_EQ(j["step_time_interval_s"].size(), 2u);
  // Without residuals the text says so instead of leaving the line out; the JSON has no interval key.
  const std::string text = report::to_text(sa, at1);
  EXPECT_NE(text.find("80% interval   none: no calibration residuals"), std::string::npos) << text;
  EXPECT_NE(text.find("job (simulation.sustained_clock)"), std::string::npos) << text;
  EXPECT_FALSE(report::to_json(sa, at1).contains("step_time_interval_s"));
  EXPECT_NE(report::to_text(sb, stored).find("80% interval   "), std::string::npos);
}

TEST(ComputeCalibration, StoreKeepsTheAttentionScaleAndReadsOldStoresAsOne) {
  // A store written before attention_scale existed: read-only it reads 1; opened for writing it gains the column.
  const std::string path = test::temp_dir() + "/old-compute.sqlite";
  std::filesystem::remove(path);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const char* old_schema =
        "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1);"
        "CREATE TABLE nccl_calibration (id INTEGER PRIMARY KEY AUTOINCREMENT, gpu TEXT NOT NULL, interconnect TEXT NOT NULL,"
        " nodes INTEGER NOT NULL, gpus_per_node INTEGER NOT NULL, nccl_version TEXT NOT NULL, collective TEXT NOT NULL,"
        " chunk_bytes INTEGER NOT NULL, alpha_us REAL NOT NULL, beta_us REAL NOT NULL, gamma_us REAL NOT NULL,"
        " intra_efficiency REAL NOT NULL, inter_efficiency REAL NOT NULL, reduce_GBps REAL NOT NULL, fitted TEXT NOT NULL,"
        " points INTEGER NOT NULL, mean_abs_error_pct REAL NOT NULL, max_abs_error_pct REAL NOT NULL,"
        " cv_mean_abs_error_pct REAL, source TEXT NOT NULL, created TEXT NOT NULL);"
        "CREATE TABLE compute_calibration (id INTEGER PRIMARY KEY AUTOINCREMENT, arch TEXT NOT NULL,"
        " sustained_clock REAL NOT NULL, runs INTEGER NOT NULL, mape_pct REAL NOT NULL, loo_mape_pct REAL NOT NULL,"
        " interval_low REAL NOT NULL, interval_high REAL NOT NULL, source TEXT NOT NULL, created TEXT NOT NULL);"
        "INSERT INTO compute_calibration (arch, sustained_clock, runs, mape_pct, loo_mape_pct, interval_low,"
        " interval_high, source, created) VALUES ('hopper', 0.7, 3, 5, 6, -0.1, 0.1, 'old', 'then');";
    ASSERT_EQ(sqlite3_exec(db, old_schema, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  {
    const auto ro = hw::CalibrationStore::open_existing(path);
    ASSERT_TRUE(ro.has_value());
    const auto row = ro->lookup_compute("hopper");
    ASSERT_TRUE(row.has_value());
    EXPECT_DOUBLE_EQ(row->sustained_clock, 0.7);
    EXPECT_DOUBLE_EQ(row->attention_scale, 1.0);
    EXPECT_TRUE(row->kind_intervals.empty());  // nor per-kind bands: the row's band serves every kind
  }
  hw::CalibrationStore s = hw::CalibrationStore::open(path);
  EXPECT_DOUBLE_EQ(s.lookup_compute("hopper")->attention_scale, 1.0);  // the old row, migrated
  s.insert_compute(hopper_row(0.8, 0.75));
  EXPECT_DOUBLE_EQ(s.lookup_compute("hopper")->attention_scale, 0.75);
}

TEST(ComputeCalibration, AttentionScaleSlowsOnlyTheAttentionKernels) {
  // A long-sequence job (attention-heavy): the store's scale applies, the job's own wins, and the step changes by
  // exactly the attention kernels' time (here nothing overlaps them on rank 0 of a single GPU).
  const std::string store = test::temp_dir() + "/attention.sqlite";
  fresh_store(store, {hopper_row(1.0, 0.5)});
  std::string yaml = test::small_gpt_yaml(1, 1, 1, 1);
  yaml.replace(yaml.find("seq_length: 1024"), 16, "seq_length: 8192");
  auto with = [&](const std::string& sim) { return test::job_from_yaml(test::with_simulation(yaml, sim)); };
  sim::ComputeCalibration cal;
  sim::make_compute_model(stepsim::catalog::shipped(), with("calibration_store: " + store), &cal);
  EXPECT_DOUBLE_EQ(cal.attention_scale, 0.5);
  EXPECT_EQ(cal.source, "store " + store + "; attention kernels x0.50");  // the summary's calibration note
  sim::make_compute_model(stepsim::catalog::shipped(), with("calibration_store: " + store + ", attention_scale: 2.0"), &cal);
  EXPECT_DOUBLE_EQ(cal.attention_scale, 2.0);
  EXPECT_EQ(cal.source, "store " + store + "; attention kernels x2.00 (simulation.attention_scale)");
  const auto base = sim::run_simulation(stepsim::catalog::shipped(), with("calibration_store: none, sustained_clock: 1.0"), {0});
  const auto half = sim::run_simulation(stepsim::catalog::shipped(), with("calibration_store: none, sustained_clock: 1.0, attention_scale: 0.5"), {0});
  // Nanoseconds of compute in attention kernels and in the rest, on rank 0's program.
  // The eager launch gap before each attention kernel is host time: it does not scale with the kernel.
  const hw::GpuSpec& gpu = stepsim::catalog::shipped().gpus.find("H100-SXM");  // small_gpt_yaml's GPU
  const int64_t gap_ns = std::llround(stepsim::catalog::shipped().efficiency.resolve(gpu).launch_gap_us * 1e3);
  auto split = [gap_ns](const sim::Simulation& sim) {
    std::pair<int64_t, int64_t> t{0, 0};
    for (const auto& op : sim.workload.programs[0].ops) {
      if (op.kind != workload::OpKind::Compute) continue;
      const bool attention = op.category == workload::ComputeCategory::Attention;
      (attention ? t.first : t.second) += op.duration_ns - (attention ? gap_ns : 0);
    }
    return t;
  };
  const auto [attention_ns, other_ns] = split(base);
  const auto [attention_half_ns, other_half_ns] = split(half);
  EXPECT_GT(attention_ns, 0);
  EXPECT_EQ(other_half_ns, other_ns);
  EXPECT_NEAR(static_cast<double>(attention_half_ns) / static_cast<double>(attention_ns), 2.0, 1e-3);
  EXPECT_EQ(half.result.step_ns - base.result.step_ns, attention_half_ns - attention_ns);
}

}  // namespace
}  // namespace stepsim
