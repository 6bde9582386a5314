// Calibration: the bounded least squares, the NCCL parameter fit (synthetic points from the model with known
// parameters, and the real A100 and issue-350 measurements), the SQLite store and `stepsim calibrate`.
#include <gtest/gtest.h>

#include <csignal>
#include <sqlite3.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "stepsim/calibrate/box_lsq.hpp"
#include "stepsim/calibrate/nccl_calibration.hpp"
#include "stepsim/calibrate/nccl_fit.hpp"
#include "stepsim/calibrate/calibration_store.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using cost::BenchCollective;
using cost::CommPoint;

std::string a100_csv() { return std::string(STEPSIM_SHARED_DIR) + "/data/nccl-tests/a100-8gpu-all_reduce.csv"; }
std::string issue350() {
  return std::string(STEPSIM_SHARED_DIR) + "/data/real/nccl-logs/nvidia-nccl-tests-issue-350.log";
}
std::string data(const std::string& name) { return test::source_dir() + "/tests/data/nccl-tests/" + name; }

// A fresh path in the test's temp dir (never the real ~/.cache store).
std::string temp_path(const std::string& name) {
  const std::string p = stepsim::test::temp_dir() + "stepsim-cal-" + name;
  std::filesystem::remove_all(p);
  return p;
}

// ---- bounded least squares ----

TEST(Calibration, BoxLsqSolvesAndRespectsBounds) {
  // x0 + x1 = 3, x0 - x1 = 1 -> (2, 1); with x1 <= 0.5 the optimum moves to the face x1 = 0.5.
  cost::BoxLsq l(2);
  const double r1[] = {1, 1}, r2[] = {1, -1};
  l.add(r1, 3);
  l.add(r2, 1);
  const std::vector<bool> active = {true, true};
  auto x = l.solve({0, 0}, {10, 10}, active, {0, 0});
  EXPECT_NEAR(x[0], 2, 1e-12);
  EXPECT_NEAR(x[1], 1, 1e-12);
  x = l.solve({0, 0}, {10, 0.5}, active, {0, 0});
  EXPECT_NEAR(x[1], 0.5, 1e-12);
  EXPECT_NEAR(x[0], 2, 1e-12);  // d/dx0: (x0 + .5 - 3) + (x0 - .5 - 1) = 0
  // An inactive unknown keeps its start value; removing an equation undoes it.
  x = l.solve({0, 0}, {10, 10}, {true, false}, {0, 7});
  EXPECT_NEAR(x[1], 7, 0);
  EXPECT_NEAR(x[0], (3 - 7 + 1 + 7) / 2.0, 1e-12);
  l.add(r2, 1, -1);
  EXPECT_EQ(l.nonzeros(0), 1);
  x = l.solve({0, 0}, {10, 10}, active, {0, 0});
  EXPECT_NEAR(x[0] + x[1], 3, 1e-12);
}

// ---- the fit ----

spec::ClusterSpec h100_cluster() { return spec::load_cluster(stepsim::catalog::shipped().gpus, "", 64, 8, {}); }

std::vector<CommPoint> synthetic_points(const cost::NcclHardware& hw, const cost::NcclParams& truth, int ranks, int nodes) {
  std::vector<CommPoint> pts;
  for (BenchCollective c : {BenchCollective::AllReduce, BenchCollective::AllGather, BenchCollective::ReduceScatter,
                            BenchCollective::Broadcast, BenchCollective::Reduce, BenchCollective::AllToAll,
                            BenchCollective::SendRecv}) {
    for (uint64_t bytes = 4096; bytes <= (4ull << 30); bytes *= 4) {
      CommPoint p;
      p.collective = c;
      p.bytes = bytes;
      p.geometry = {ranks, nodes, ranks / nodes};
      p.time_us = cost::time_us(cost::comm_point_terms(hw, p), truth);
      p.where = "synthetic";
      pts.push_back(p);
    }
  }
  return pts;
}

void expect_rel(double got, double want, const char* what) {
  EXPECT_NEAR(got, want, 1e-6 * std::fabs(want)) << what;
}

TEST(Calibration, SyntheticPointsRecoverTheParameters) {
  const spec::ClusterSpec c = h100_cluster();
  const cost::NcclProfile& profile = stepsim::catalog::shipped().nccl_profile(c.gpu);
  const cost::NcclHardware hw = cost::nccl_hardware(stepsim::catalog::shipped(), c, profile.channels);
  cost::NcclParams truth;
  truth.alpha_us = 7.5;
  truth.beta_us = 2.1;
  truth.gamma_us = 11;
  truth.intra_efficiency = 0.7;
  truth.inter_efficiency = 0.85;
  truth.reduce_GBps = 350;
  const auto r = cost::calibrate_nccl(synthetic_points(hw, truth, 16, 2), hw, cost::NcclParamTable(profile.params));
  ASSERT_EQ(r.groups.size(), 1u);
  const cost::NcclCalibration& g = r.groups[0];
  EXPECT_EQ(g.nodes, 2);
  EXPECT_EQ(g.joint.fitted_count(), 6);
  const cost::NcclParams& p = g.joint.params;
  expect_rel(p.alpha_us, truth.alpha_us, "alpha");
  expect_rel(p.beta_us, truth.beta_us, "beta");
  expect_rel(p.gamma_us, truth.gamma_us, "gamma");
  expect_rel(p.intra_efficiency, truth.intra_efficiency, "intra");
  expect_rel(p.inter_efficiency, truth.inter_efficiency, "inter");
  expect_rel(p.reduce_GBps, truth.reduce_GBps, "reduce");
  EXPECT_LT(g.after.max_abs_pct, 1e-6);
  EXPECT_LT(g.cv.max_abs_pct, 1e-5);  // exact data: every leave-one-out refit is exact too
  EXPECT_GT(g.before.mean_abs_pct, 1);
  for (const auto& [chunk, f] : g.by_chunk) EXPECT_LT(f.max_abs_pct, 1e-6) << chunk;
  EXPECT_EQ(g.by_collective.size(), 7u);
}

TEST(Calibration, SingleNodeDataLeavesTheNetworkParametersAtTheProfile) {
  const spec::ClusterSpec c = h100_cluster();
  const cost::NcclProfile& profile = stepsim::catalog::shipped().nccl_profile(c.gpu);
  const cost::NcclHardware hw = cost::nccl_hardware(stepsim::catalog::shipped(), c, profile.channels);
  cost::NcclParams truth = profile.params;
  truth.alpha_us = 12;
  truth.beta_us = 1.5;
  truth.intra_efficiency = 0.9;
  truth.reduce_GBps = 500;
  const auto r = cost::calibrate_nccl(synthetic_points(hw, truth, 8, 1), hw, cost::NcclParamTable(profile.params));
  ASSERT_EQ(r.groups.size(), 1u);
  const cost::NcclFit& f = r.groups[0].joint;
  EXPECT_FALSE(f.fitted[2]);  // gamma: no NIC hop on one node
  EXPECT_FALSE(f.fitted[4]);  // inter_efficiency
  EXPECT_DOUBLE_EQ(f.params.gamma_us, profile.params.gamma_us);
  EXPECT_DOUBLE_EQ(f.params.inter_efficiency, profile.params.inter_efficiency);
  expect_rel(f.params.alpha_us, 12, "alpha");
  expect_rel(f.params.beta_us, 1.5, "beta");
  expect_rel(f.params.intra_efficiency, 0.9, "intra");
  expect_rel(f.params.reduce_GBps, 500, "reduce");
  EXPECT_EQ(cost::fitted_names(f), "alpha_us,beta_us,intra_efficiency,reduce_GBps");
}

// The points of a measurement file on the cluster validate-comm uses for it.
cost::NcclCalibrationResult fit_file(const std::string& path, const std::vector<std::string>& sets) {
  const cost::NcclTestsFile f = cost::read_nccl_tests(path);
  const cost::NcclTestsTable& t = f.tables.at(0);
  const int rpn = t.ranks / t.nodes;
  const spec::ClusterSpec c = spec::load_cluster(stepsim::catalog::shipped().gpus, "", t.ranks, rpn, sets);
  const cost::NcclProfile& profile = stepsim::catalog::shipped().nccl_profile(c.gpu);
  std::vector<CommPoint> pts;
  for (const auto& row : t.rows) {
    CommPoint p;
    p.collective = *t.collective;
    p.bytes = row.bytes;
    p.geometry = {t.ranks, t.nodes, rpn};
    p.time_us = row.time_us;
    pts.push_back(p);
  }
  return cost::calibrate_nccl(pts, cost::nccl_hardware(stepsim::catalog::shipped(), c, profile.channels), cost::NcclParamTable(profile.params));
}

void print_errors(const char* name, const cost::NcclCalibration& g) {
  std::cout << "[ fit      ] " << name << ": mean/max |error| profile " << g.before.mean_abs_pct << "% / "
            << g.before.max_abs_pct << "%, fitted " << g.after.mean_abs_pct << "% / " << g.after.max_abs_pct << "%, "
            << g.cv_kind << " " << g.cv.mean_abs_pct << "% / " << g.cv.max_abs_pct << "%\n";
}

TEST(Calibration, FittingTheA100CsvBeatsTheProfile) {
  const auto r = fit_file(a100_csv(), {"cluster.gpu=A100-80GB", "cluster.intra_node.bandwidth_GBps=300"});
  ASSERT_EQ(r.groups.size(), 1u);
  const cost::NcclCalibration& g = r.groups[0];
  print_errors("A100 CSV", g);
  EXPECT_EQ(g.points.size(), 8u);
  EXPECT_LT(g.after.mean_abs_pct, g.before.mean_abs_pct);
  EXPECT_GE(g.cv.mean_abs_pct, g.after.mean_abs_pct);  // held-out points are predicted worse than fitted ones
  EXPECT_EQ(g.cv_kind, "leave-one-out");
  EXPECT_FALSE(g.joint.fitted[2]);
  EXPECT_FALSE(g.joint.fitted[4]);
}

TEST(Calibration, FittingIssue350BeatsTheProfile) {
  const auto r = fit_file(issue350(), {"cluster.gpu=A100-PCIE-40GB", "cluster.intra_node.bandwidth_GBps=24",
                                       "cluster.inter_node.bandwidth_GBps=25"});
  ASSERT_EQ(r.groups.size(), 1u);
  const cost::NcclCalibration& g = r.groups[0];
  print_errors("issue-350 gather", g);
  EXPECT_EQ(g.nodes, 2);
  EXPECT_EQ(g.points.size(), 50u);
  EXPECT_LT(g.after.mean_abs_pct, g.before.mean_abs_pct);
  EXPECT_TRUE(g.joint.fitted[4]);   // inter_efficiency: the gather crosses the NIC
  EXPECT_FALSE(g.joint.fitted[3]);  // one GPU per node: no NVLink/PCIe hop
}

TEST(Calibration, PointsWithNothingToFitAreSkipped) {
  const spec::ClusterSpec c = h100_cluster();
  const cost::NcclProfile& profile = stepsim::catalog::shipped().nccl_profile(c.gpu);
  std::vector<CommPoint> pts(3);
  pts[0].bytes = 0, pts[0].time_us = 5, pts[0].geometry = {8, 1, 8}, pts[0].where = "a:1";
  pts[1].bytes = 1024, pts[1].time_us = 0, pts[1].geometry = {8, 1, 8}, pts[1].where = "a:2";
  pts[2].bytes = 1024, pts[2].time_us = 5, pts[2].geometry = {1, 1, 1}, pts[2].where = "a:3";
  const auto r = cost::calibrate_nccl(pts, cost::nccl_hardware(stepsim::catalog::shipped(), c, profile.channels), cost::NcclParamTable(profile.params));
  EXPECT_TRUE(r.groups.empty());
  ASSERT_EQ(r.skipped.size(), 3u);
  EXPECT_EQ(r.skipped[0].why, "size is 0");
  EXPECT_EQ(r.skipped[1].why, "time is 0");
  EXPECT_EQ(r.skipped[2].why, "one rank: NCCL does not communicate");
}

// ---- the store ----

hw::CalibrationRow row(int nodes, const std::string& version, double alpha, const std::string& collective = "all",
                       uint64_t chunk = 0) {
  hw::CalibrationRow r;
  r.gpu = "H100-SXM";
  r.interconnect = "intra=450GBps,inter=400Gbps";
  r.nodes = nodes;
  r.gpus_per_node = 8;
  r.nccl_version = version;
  r.collective = collective;
  r.chunk_bytes = chunk;
  r.alpha_us = alpha;
  r.beta_us = 2;
  r.gamma_us = 12;
  r.intra_efficiency = 0.75;
  r.inter_efficiency = 0.8;
  r.reduce_GBps = 600;
  r.fitted = "alpha_us,beta_us";
  r.points = 10;
  r.mean_abs_error_pct = 3.5;
  r.max_abs_error_pct = 9.25;
  r.source = "x.txt (all_reduce)";
  r.created = "2025-01-02T03:04:05Z";
  return r;
}

TEST(Calibration, StoreRoundTrip) {
  const std::string path = temp_path("roundtrip/sub/dir/cal.sqlite");  // directories are created
  hw::CalibrationRow a = row(2, "2.18.3", 9.5);
  a.cv_mean_abs_error_pct = 4.25;
  const hw::CalibrationRow b = row(1, "2.18.3", 8, "all", 1 << 20);
  {
    hw::CalibrationStore s = hw::CalibrationStore::open(path);
    EXPECT_EQ(s.insert({a, b}), (std::vector<int64_t>{1, 2}));
  }
  const auto s = hw::CalibrationStore::open_existing(path);
  ASSERT_TRUE(s.has_value());
  const auto rows = s->query("H100-SXM", "intra=450GBps,inter=400Gbps");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].nodes, 1);  // sorted by nodes
  EXPECT_EQ(rows[0].chunk_bytes, 1u << 20);
  EXPECT_FALSE(rows[0].cv_mean_abs_error_pct.has_value());
  const hw::CalibrationRow& r = rows[1];
  EXPECT_EQ(r.id, 1);
  EXPECT_EQ(r.gpu, a.gpu);
  EXPECT_EQ(r.interconnect, a.interconnect);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.gpus_per_node, 8);
  EXPECT_EQ(r.nccl_version, "2.18.3");
  EXPECT_EQ(r.collective, "all");
  EXPECT_EQ(r.chunk_bytes, 0u);
  EXPECT_DOUBLE_EQ(r.alpha_us, 9.5);
  EXPECT_DOUBLE_EQ(r.beta_us, 2);
  EXPECT_DOUBLE_EQ(r.gamma_us, 12);
  EXPECT_DOUBLE_EQ(r.intra_efficiency, 0.75);
  EXPECT_DOUBLE_EQ(r.inter_efficiency, 0.8);
  EXPECT_DOUBLE_EQ(r.reduce_GBps, 600);
  EXPECT_EQ(r.fitted, "alpha_us,beta_us");
  EXPECT_EQ(r.points, 10);
  EXPECT_DOUBLE_EQ(r.mean_abs_error_pct, 3.5);
  EXPECT_DOUBLE_EQ(r.max_abs_error_pct, 9.25);
  EXPECT_DOUBLE_EQ(r.cv_mean_abs_error_pct.value(), 4.25);
  EXPECT_EQ(r.source, a.source);
  EXPECT_EQ(r.created, a.created);
  EXPECT_EQ(s->query("H100-SXM", "intra=450GBps,inter=400Gbps", std::string("2.16.5")).size(), 0u);
  EXPECT_EQ(s->query("A100-80GB", "intra=450GBps,inter=400Gbps").size(), 0u);
  EXPECT_EQ(s->all().size(), 2u);
  EXPECT_FALSE(hw::CalibrationStore::open_existing(temp_path("absent.sqlite")).has_value());
}

// A directory or a device is refused by name (it was "disk I/O error", or /dev/zero read as an empty store), opened
// for writing or for reading alike; the CLI exits 2.
TEST(Calibration, StoreMustBeARegularFile) {
  const std::string dir = test::temp_dir() + "store-dir";
  std::filesystem::create_directories(dir);
  for (const std::string& path : {dir, std::string("/dev/zero")}) {
    const std::string what = path == dir ? "(this is a directory)" : "(this is not a regular file)";
    std::string e = test::error_of([&] { (void)hw::CalibrationStore::open(path); });
    EXPECT_EQ(e, path + ": the calibration store must be a regular file " + what);
    e = test::error_of([&] { (void)hw::CalibrationStore::open_existing(path); });
    EXPECT_EQ(e, path + ": the calibration store must be a regular file " + what);
  }
  const auto r = test::run_cli_env("STEPSIM_CALIBRATION_DB=" + dir, "calibrate list");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("must be a regular file"), std::string::npos) << r.output;
}

TEST(Calibration, StoreRejectsForeignFiles) {
  const std::string text = temp_path("not-sqlite.sqlite");
  std::ofstream(text) << std::string(4096, 'x') << "\n";
  std::string e = test::error_of([&] { (void)hw::CalibrationStore::open(text); });
  EXPECT_EQ(e.rfind(text + ": not an SQLite database", 0), 0u) << e;
  e = test::error_of([&] { (void)hw::CalibrationStore::open_existing(text); });
  EXPECT_EQ(e.rfind(text + ": not an SQLite database", 0), 0u) << e;

  const std::string foreign = temp_path("foreign.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE users (id INTEGER, name TEXT)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  e = test::error_of([&] { (void)hw::CalibrationStore::open(foreign); });
  EXPECT_NE(e.find(foreign + ": an SQLite database without stepsim's calibration tables (it has: users)"),
            std::string::npos) << e;

  const std::string newer = temp_path("newer.sqlite");
  { hw::CalibrationStore::open(newer); }
  ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE schema_version SET version = 7", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  e = test::error_of([&] { (void)hw::CalibrationStore::open(newer); });
  EXPECT_NE(e.find("schema version 7; this stepsim reads version 1"), std::string::npos) << e;
}

TEST(Calibration, ConcurrentFirstWritersAllSucceed) {
  // Issue 15 item 17: several processes creating the same new store at once. The schema is made inside the write
  // transaction, so each waits for the other and none fails with "table schema_version already exists"; every
  // process's row is kept. Repeated to give the race its chances.
  for (int trial = 0; trial < 5; ++trial) {
    const std::string path = temp_path("concurrent-" + std::to_string(trial) + ".sqlite");
    std::filesystem::remove(path);
    constexpr int kWriters = 6;
    std::vector<pid_t> kids;
    for (int w = 0; w < kWriters; ++w) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        int code = 0;
        try {
          hw::CalibrationStore s = hw::CalibrationStore::open(path);
          hw::ComputeCalibrationRow row;
          row.arch = "hopper";
          row.sustained_clock = 0.5 + 0.01 * w;
          row.source = "writer " + std::to_string(w);
          row.created = "now";
          s.insert_compute(row);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "writer %d: %s\n", w, e.what());
          code = 1;
        }
        _exit(code);
      }
      kids.push_back(pid);
    }
    for (const pid_t pid : kids) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "trial " << trial;
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM compute_calibration", -1, &q, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(q, 0), kWriters) << "trial " << trial;
    sqlite3_finalize(q);
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM schema_version", -1, &q, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(q, 0), 1) << "trial " << trial;  // one version row, not one per writer
    sqlite3_finalize(q);
    sqlite3_close(db);
  }
}

TEST(Calibration, AWriterKilledInsideACommitPoisonsNoLaterReader) {
  // Issue 48 item 2: `kill -9` while a write's pages are already in the store left a hot journal that read-only
  // readers cannot roll back ("attempt to write a readonly database" from every simulate). A reader now opens the
  // store read-write where it may, so SQLite rolls the interrupted write back and nothing committed is lost. The
  // writer is killed after a different amount of work each time (its cache of one page spills every insert).
  const std::string path = temp_path("killed.sqlite");
  std::filesystem::remove(path);
  {
    hw::CalibrationStore s = hw::CalibrationStore::open(path);
    hw::ComputeCalibrationRow row;
    row.arch = "hopper";
    row.sustained_clock = 0.77;
    row.source = "committed";
    row.created = "now";
    s.insert_compute(row);
  }
  for (int kill_after = 1; kill_after <= 6; ++kill_after) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      sqlite3* db = nullptr;
      if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) _exit(3);
      sqlite3_exec(db, "PRAGMA cache_size = 1; BEGIN IMMEDIATE; CREATE TABLE junk (x BLOB)", nullptr, nullptr, nullptr);
      for (int i = 0; i < kill_after * 4; ++i) {
        sqlite3_exec(db, "INSERT INTO junk VALUES (randomblob(65536))", nullptr, nullptr, nullptr);
      }
      raise(SIGKILL);  // inside the transaction, its pages partly written to the store
      _exit(4);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    std::error_code ec;
    EXPECT_GT(std::filesystem::file_size(path + "-journal", ec), 0u) << "no hot journal left (kill " << kill_after << ")";
    // The next reader succeeds and sees exactly what was committed.
    const auto store = hw::CalibrationStore::open_existing(path);
    ASSERT_TRUE(store.has_value());
    const auto row = store->lookup_compute("hopper");
    ASSERT_TRUE(row.has_value());
    EXPECT_DOUBLE_EQ(row->sustained_clock, 0.77);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM compute_calibration", -1, &q, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(q), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(q, 0), 1);
    sqlite3_finalize(q);
    EXPECT_NE(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM junk", -1, &q, nullptr), SQLITE_OK);  // rolled back
    sqlite3_finalize(q);
    sqlite3_close(db);
  }
  // And a simulation on that store runs (exit 0) after one more interrupted write.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_exec(db, "PRAGMA cache_size = 1; BEGIN IMMEDIATE; CREATE TABLE junk (x BLOB)", nullptr, nullptr, nullptr);
    for (int i = 0; i < 8; ++i) sqlite3_exec(db, "INSERT INTO junk VALUES (randomblob(65536))", nullptr, nullptr, nullptr);
    raise(SIGKILL);
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const auto r = test::run_cli_env("STEPSIM_CALIBRATION_DB=" + path,
                                   "simulate " + test::source_dir() + "/examples/llama2-7b-8.yaml --json /dev/null");
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST(Calibration, LookupPicksNodesThenVersionThenNewest) {
  const std::string path = temp_path("lookup.sqlite");
  hw::CalibrationStore s = hw::CalibrationStore::open(path);
  s.insert({row(2, "2.18.3", 1), row(4, "2.16.5", 2), row(4, "2.18.3", 3), row(4, "", 4), row(8, "2.18.3", 5),
            row(4, "2.18.3", 6, "all_gather"), row(4, "2.18.3", 7, "all", 1 << 20)});
  const std::string g = "H100-SXM", ic = "intra=450GBps,inter=400Gbps";
  auto alpha = [&](int nodes, const std::string& v, const std::string& coll = "all", uint64_t chunk = 0) {
    const auto r = s.lookup(g, ic, nodes, v, coll, chunk);
    return r ? r->alpha_us : -1.0;
  };
  EXPECT_EQ(alpha(1, ""), 1);           // below every node count: the smallest
  EXPECT_EQ(alpha(2, ""), 1);
  EXPECT_EQ(alpha(3, ""), 1);           // the largest <= 3
  EXPECT_EQ(alpha(5, ""), 4);           // nodes 4: the newest row
  EXPECT_EQ(alpha(5, "2.16.5"), 2);     // an exact version beats a newer row
  EXPECT_EQ(alpha(5, "2.18.3"), 3);
  EXPECT_EQ(alpha(5, "9.9.9"), 4);      // no match: the newest
  EXPECT_EQ(alpha(64, "2.16.5"), 5);    // nodes 8 has no 2.16.5 row
  EXPECT_EQ(alpha(5, "", "all_gather"), 6);
  EXPECT_EQ(alpha(5, "", "broadcast"), 4);  // no broadcast rows: the joint ones
  EXPECT_EQ(alpha(5, "", "all", 1 << 20), 7);
  EXPECT_EQ(alpha(5, "", "all", 1 << 21), -1);
  EXPECT_FALSE(s.lookup("A100-80GB", ic, 4).has_value());
}

TEST(Calibration, ParamTableForTheModelUsesTheStore) {
  const std::string path = temp_path("model.sqlite");
  const spec::ClusterSpec c = h100_cluster();
  const cost::NcclProfile& profile = stepsim::catalog::shipped().nccl_profile(c.gpu);
  EXPECT_EQ(hw::interconnect_key(c), "intra=450GBps,inter=400Gbps");
  // No store yet: the profile.
  EXPECT_DOUBLE_EQ(cost::calibrated_param_table(stepsim::catalog::shipped().gpu(c.gpu), c, profile, path).lookup(4, 0).alpha_us, profile.params.alpha_us);
  {
    hw::CalibrationStore s = hw::CalibrationStore::open(path);
    s.insert({row(1, "2.18.3", 20), row(2, "2.18.3", 30), row(2, "2.16.5", 31), row(2, "2.18.3", 40, "all_reduce")});
  }
  const cost::NcclParamTable t = cost::calibrated_param_table(stepsim::catalog::shipped().gpu(c.gpu), c, profile, path);
  EXPECT_DOUBLE_EQ(t.lookup(1, 0).alpha_us, 20);
  EXPECT_DOUBLE_EQ(t.lookup(8, 0).alpha_us, 31);  // newest of nodes 2 (per-collective rows are not the model's)
  EXPECT_DOUBLE_EQ(t.lookup(8, 0).intra_efficiency, 0.75);
  EXPECT_DOUBLE_EQ(cost::calibrated_param_table(stepsim::catalog::shipped().gpu(c.gpu), c, profile, path, "2.18.3").lookup(8, 0).alpha_us, 30);
  // Another interconnect: nothing stored for it.
  spec::ClusterSpec other = c;
  other.inter_node.bandwidth_GBps = 25;
  EXPECT_DOUBLE_EQ(cost::calibrated_param_table(stepsim::catalog::shipped().gpu(other.gpu), other, profile, path).lookup(8, 0).alpha_us, profile.params.alpha_us);
  // A row edited to nonsense is refused, naming the store and row.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE nccl_calibration SET intra_efficiency = -1 WHERE id = 1", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const std::string e = test::error_of([&] { (void)cost::calibrated_param_table(stepsim::catalog::shipped().gpu(c.gpu), c, profile, path); });
  EXPECT_NE(e.find(path + ": row 1: intra_efficiency = -1"), std::string::npos) << e;
}

// ---- the command ----

// --proto (issue 14 item 4): measurements taken under NCCL_PROTO are fitted with that protocol's terms on every
// point that has a protocol choice; an unknown name exits 2.
TEST(Calibration, CliForcedProtocolAppliesToEveryPoint) {
  for (const std::string proto : {"LL", "LL128", "Simple"}) {
    const std::string json = temp_path("proto-" + proto + ".json");
    const auto r = test::run_cli("calibrate comm --nccl-tests " + a100_csv() + " --dry-run --proto " + proto +
                                 " --json " + json);
    ASSERT_EQ(r.code, 0) << r.output;
    const auto j = nlohmann::json::parse(test::read_file(json));
    for (const auto& p : j["groups"][0]["points"]) EXPECT_EQ(p["protocol"], proto) << p.dump();
  }
  const auto bad = test::run_cli("calibrate comm --nccl-tests " + a100_csv() + " --dry-run --proto LL64");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("--proto LL64: one of auto, LL, LL128, Simple"), std::string::npos) << bad.output;
}

TEST(Calibration, CliEndToEndOnTheA100Csv) {
  const std::string store = temp_path("cli.sqlite"), json = temp_path("cli.json");
  const auto r = test::run_cli("calibrate comm --nccl-tests " + a100_csv() + " --store " + store + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("# cluster: A100-80GB, intra=300GBps,inter=400Gbps, 8 GPUs per node"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# 1 node, 8 points"), std::string::npos);
  EXPECT_NE(r.output.find("gamma_us                   14           14  (profile value: no point exercises it)"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("# stored 1 row in " + store), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(test::read_file(json));
  EXPECT_EQ(j["gpu"], "A100-80GB");
  EXPECT_EQ(j["stored_ids"], nlohmann::json::array({1}));
  const auto& e = j["groups"][0]["error_pct"];
  std::cout << "[ fit      ] CLI A100 CSV: profile " << e["before"]["mean"] << "%, fitted " << e["after"]["mean"]
            << "%, leave-one-out " << e["cv"]["mean"] << "%\n";
  EXPECT_LT(e["after"]["mean"].get<double>(), e["before"]["mean"].get<double>());
  EXPECT_EQ(j["groups"][0]["points"].size(), 8u);
  EXPECT_DOUBLE_EQ(j["groups"][0]["points"][5]["measured_us"].get<double>(), 8203.9);

  const auto list = test::run_cli("calibrate list --store " + store);
  ASSERT_EQ(list.code, 0) << list.output;
  EXPECT_NE(list.output.find("1 row\n"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("A100-80GB      intra=300GBps,inter=400Gbps"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("a100-8gpu-all_reduce.csv (all_reduce)"), std::string::npos);

  // A second run adds rows; the same input gives the same report.
  const auto again = test::run_cli("calibrate comm --nccl-tests " + a100_csv() + " --store " + store);
  ASSERT_EQ(again.code, 0);
  EXPECT_NE(again.output.find("(ids 2)"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.substr(0, again.output.find("# stored")), r.output.substr(0, r.output.find("# stored")));
}

// Issue 15 item 17 as a user meets it: several `stepsim calibrate comm` processes started at once on a store that
// does not exist yet (a cluster's jobs calibrating on first use). Each exits 0 and every row is kept; before the fix
// 5 of 15 trials lost one process to "table schema_version already exists".
TEST(Calibration, ConcurrentCalibrateCommandsOnANewStoreAllSucceed) {
  constexpr int kProcesses = 4;
  for (int trial = 0; trial < 3; ++trial) {
    const std::string dir = temp_path("cli-concurrent-" + std::to_string(trial) + "/");
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string store = dir + "store.sqlite";
    std::string script;
    for (int i = 0; i < kProcesses; ++i)
      script += "( " + std::string(STEPSIM_BINARY) + " calibrate comm --nccl-tests " + a100_csv() + " --store " +
                store + " > " + dir + "out" + std::to_string(i) + " 2>&1; echo $? > " + dir + "rc" +
                std::to_string(i) + " ) & ";
    script += "wait";
    ASSERT_EQ(std::system(("sh -c '" + script + "'").c_str()), 0);
    for (int i = 0; i < kProcesses; ++i) {
      const std::string out = test::read_file(dir + "out" + std::to_string(i));
      EXPECT_EQ(test::read_file(dir + "rc" + std::to_string(i)), "0\n") << "trial " << trial << ": " << out;
      EXPECT_NE(out.find("# stored 1 row in " + store), std::string::npos) << out;
    }
    const auto list = test::run_cli("calibrate list --store " + store);
    ASSERT_EQ(list.code, 0) << list.output;
    EXPECT_NE(list.output.find(std::to_string(kProcesses) + " rows\n"), std::string::npos) << list.output;
  }
}

TEST(Calibration, CliUsesTheStoreFromTheEnvironment) {
  const std::string store = temp_path("env/store.sqlite");
  ::setenv("STEPSIM_CALIBRATION_DB", store.c_str(), 1);
  const auto r = test::run_cli("calibrate comm --nccl-tests " + issue350() +
                               " --set cluster.intra_node.bandwidth_GBps=24 --set cluster.inter_node.bandwidth_GBps=25");
  const auto list = test::run_cli("calibrate list");
  ::unsetenv("STEPSIM_CALIBRATION_DB");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("# cluster: A100-PCIE-40GB, intra=24GBps,inter=200Gbps, 1 GPU per node"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("NCCL version 2.16.5"), std::string::npos);
  EXPECT_NE(r.output.find("# 2 nodes, 50 points"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(store));
  ASSERT_EQ(list.code, 0);
  EXPECT_NE(list.output.find("A100-PCIE-40GB intra=24GBps,inter=200Gbps       2    1 2.16.5"), std::string::npos)
      << list.output;
}

TEST(Calibration, CliRefusesForeignStoresWithExitCode2) {
  const std::string text = temp_path("cli-text.sqlite");
  std::ofstream(text) << "this is a text file, not a database\n" << std::string(2000, 'y') << "\n";
  auto r = test::run_cli("calibrate comm --nccl-tests " + a100_csv() + " --store " + text);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("stepsim: error: " + text + ": not an SQLite database"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("# 1 node"), std::string::npos);  // refused before any work
  r = test::run_cli("calibrate list --store " + text);
  EXPECT_EQ(r.code, 2) << r.output;

  const std::string foreign = temp_path("cli-foreign.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  r = test::run_cli("calibrate comm --nccl-tests " + a100_csv() + " --store " + foreign);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(foreign + ": an SQLite database without stepsim's calibration tables"), std::string::npos)
      << r.output;
}

TEST(Calibration, CliBadInputsExitWith2AndNameTheFile) {
  const std::string store = temp_path("bad.sqlite");
  auto r = test::run_cli("calibrate comm --nccl-tests " + data("rows-only.txt") + " --store " + store);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("rows-only.txt:1: the text names no nccl-tests binary (*_perf); give --collective"),
            std::string::npos) << r.output;
  r = test::run_cli("calibrate comm --nccl-tests " + data("rows-only.txt") + " --collective all_reduce --store " + store);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("give --gpus"), std::string::npos) << r.output;
  r = test::run_cli("calibrate comm --nccl-tests " + issue350() + " --collective all_reduce --dry-run");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("nvidia-nccl-tests-issue-350.log:3: the text names gather_perf but --collective says all_reduce"),
            std::string::npos) << r.output;
  r = test::run_cli("calibrate comm --nccl-tests " + data("crashed-no-rows.txt") + " --dry-run");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("crashed-no-rows.txt: no nccl-tests result rows"), std::string::npos) << r.output;
  r = test::run_cli("calibrate comm --nccl-tests /nonexistent/x.txt --dry-run");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("/nonexistent/x.txt: cannot read"), std::string::npos) << r.output;
  r = test::run_cli("calibrate comm --dry-run");
  EXPECT_EQ(r.code, 2);
  r = test::run_cli("calibrate comm --nccl-tests " + a100_csv() + " " + issue350() + " --dry-run");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("calibrate each GPU separately"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(store));  // nothing was stored by any of these
}

TEST(Calibration, CliRowsOnlyWithOptionsAndDryRun) {
  const auto r = test::run_cli("calibrate comm --nccl-tests " + data("rows-only.txt") +
                               " --collective all_reduce --gpus 8 --dry-run");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 node(s) from 8 ranks / 8 GPUs per node (default; set --gpus-per-node)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# --dry-run: 1 row not stored"), std::string::npos) << r.output;
}

TEST(Calibration, CliKernelRecords) {
  const std::string store = temp_path("records.sqlite");
  const auto r = test::run_cli("calibrate comm --records " + data("records-h100.csv") + " --store " + store);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("records-h100.csv: 7 kernel records, 5 bad row(s) skipped (first: line 10)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# 1 node, 2 points"), std::string::npos);
  EXPECT_NE(r.output.find("# 2 nodes, 5 points"), std::string::npos);
  const auto s = hw::CalibrationStore::open_existing(store);
  ASSERT_TRUE(s.has_value());
  const auto rows = s->all();
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[0].nodes, 1);
  EXPECT_EQ(rows[0].gpu, "H100-SXM");
  EXPECT_EQ(rows[0].source, "records-h100.csv (records: all_gather, all_reduce, reduce_scatter)");
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// `stepsim comm --model nccl` and a job's simulation.calibration_store read the fitted rows; `none` ignores them.
TEST(Calibration, CommAndJobsPickUpTheStore) {
  const std::string store = temp_path("pickup.sqlite");
  const auto cal = test::run_cli("calibrate comm --nccl-tests " + a100_csv() + " --store " + store);
  ASSERT_EQ(cal.code, 0) << cal.output;
  // The fit is over all 8 rows; the profile (tuned on the rows >= 4 MiB) misses the 32 KiB one by 44%.
  auto time_32k = [&](const std::string& store_opt) {
    const std::string json = temp_path("pickup.json");
    const auto r = test::run_cli("comm --collective all_reduce --gpus 8 --sizes 32K --set cluster.gpu=A100-80GB"
                                 " --set cluster.intra_node.bandwidth_GBps=300 --store " + store_opt +
                                 " --json " + json);
    EXPECT_EQ(r.code, 0) << r.output;
    return nlohmann::json::parse(test::read_file(json))[0]["time_us"].get<double>();
  };
  const double measured = 43.83;  // the CSV's 32 KiB row
  const double fitted = time_32k(store), profile = time_32k("none");
  EXPECT_NE(fitted, profile);
  EXPECT_LT(std::abs(fitted - measured), std::abs(profile - measured)) << fitted << " vs " << profile;
  // A store path that does not exist: the profile.
  EXPECT_DOUBLE_EQ(time_32k(temp_path("absent.sqlite")), profile);

  // The same through a job: an 8-GPU A100 node, all-reduce of 32 KiB.
  const std::string yaml = test::small_gpt_yaml(8, 1, 1, 8);
  auto job_time = [&](const std::string& store_key) {
    spec::JobSpec job = test::job_from_yaml(yaml);
    job.cluster.gpu = "A100-80GB";
    job.cluster.intra_node.bandwidth_GBps = 300;
    job.simulation.comm_model = spec::CommModel::Nccl;
    job.simulation.calibration_store = store_key;
    return sim::make_collective_model(stepsim::catalog::shipped(), job)->collective_ns(workload::CollType::AllReduce, 32768, {8, 1, 8});
  };
  EXPECT_DOUBLE_EQ(job_time(store) / 1e3, fitted);
  EXPECT_DOUBLE_EQ(job_time("none") / 1e3, profile);
}

}  // namespace
}  // namespace stepsim
