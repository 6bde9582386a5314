// SQLite through its C API. Every value from a user or a file is bound to a prepared statement; the only SQL text
// built at run time joins constant clauses.
#include "stepsim/calibrate/calibration_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <unistd.h>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/io/printable.hpp"

namespace stepsim::hw {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE nccl_calibration (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  gpu TEXT NOT NULL,
  interconnect TEXT NOT NULL,
  nodes INTEGER NOT NULL,
  gpus_per_node INTEGER NOT NULL,
  nccl_version TEXT NOT NULL,
  collective TEXT NOT NULL,
  chunk_bytes INTEGER NOT NULL,
  alpha_us REAL NOT NULL,
  beta_us REAL NOT NULL,
  gamma_us REAL NOT NULL,
  intra_efficiency REAL NOT NULL,
  inter_efficiency REAL NOT NULL,
  reduce_GBps REAL NOT NULL,
  fitted TEXT NOT NULL,
  points INTEGER NOT NULL,
  mean_abs_error_pct REAL NOT NULL,
  max_abs_error_pct REAL NOT NULL,
  cv_mean_abs_error_pct REAL,
  source TEXT NOT NULL,
  created TEXT NOT NULL
);
CREATE INDEX nccl_calibration_key ON nccl_calibration (gpu, interconnect, nodes);
)sql";

// Added after schema version 1 without changing it: created if missing, absent tables read as empty.
constexpr const char* kComputeSchema = R"sql(
CREATE TABLE IF NOT EXISTS compute_calibration (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  arch TEXT NOT NULL,
  sustained_clock REAL NOT NULL,
  runs INTEGER NOT NULL,
  mape_pct REAL NOT NULL,
  loo_mape_pct REAL NOT NULL,
  interval_low REAL NOT NULL,
  interval_high REAL NOT NULL,
  source TEXT NOT NULL,
  created TEXT NOT NULL
);
)sql";

constexpr const char* kColumns =
    "id, gpu, interconnect, nodes, gpus_per_node, nccl_version, collective, chunk_bytes, alpha_us, beta_us, gamma_us, "
    "intra_efficiency, inter_efficiency, reduce_GBps, fitted, points, mean_abs_error_pct, max_abs_error_pct, "
    "cv_mean_abs_error_pct, source, created";
constexpr const char* kOrder = " ORDER BY nodes, collective, chunk_bytes, nccl_version, id";

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql, const std::string& path) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK) fail(path, "cannot read");
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() { return s_; }
  // SQLITE_ROW -> true, SQLITE_DONE -> false, anything else -> InputError.
  bool step(const std::string& path, const char* what) {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(path, what);
    return false;
  }
  void bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  std::string text(int i) {
    const unsigned char* t = sqlite3_column_text(s_, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  [[noreturn]] void fail(const std::string& path, const char* what) {
    const int code = sqlite3_errcode(db_);
    const std::string msg = sqlite3_errmsg(db_);
    if (code == SQLITE_NOTADB) {
      throw InputError(path + ": not an SQLite database (" + msg + "); use another --store or $STEPSIM_CALIBRATION_DB");
    }
    if (code == SQLITE_CORRUPT) throw InputError(path + ": corrupt SQLite database (" + msg + ")");
    throw InputError(path + ": " + what + " the calibration store: " + msg);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

void exec(sqlite3* db, const char* sql, const std::string& path, const char* what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    if (sqlite3_errcode(db) == SQLITE_NOTADB) throw InputError(path + ": not an SQLite database (" + msg + ")");
    throw InputError(path + ": " + what + " the calibration store: " + msg);
  }
}

std::vector<std::string> table_names(sqlite3* db, const std::string& path) {
  Stmt s(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", path);
  std::vector<std::string> out;
  while (s.step(path, "cannot read")) out.push_back(s.text(0));
  return out;
}

bool has_column(sqlite3* db, const std::string& path, const char* table, const std::string& column) {
  Stmt s(db, std::string("PRAGMA table_info(") + table + ")", path);
  while (s.step(path, "cannot read")) {
    if (s.text(1) == column) return true;
  }
  return false;
}

// false: an empty database (no tables yet).
bool check_schema(sqlite3* db, const std::string& path) {
  const std::vector<std::string> tables = table_names(db, path);
  if (tables.empty()) return false;
  const bool ours = std::count(tables.begin(), tables.end(), "schema_version") == 1 &&
                    std::count(tables.begin(), tables.end(), "nccl_calibration") == 1;
  if (!ours) {
    std::string list;
    for (const auto& t : tables) list += (list.empty() ? "" : ", ") + t;
    throw InputError(path + ": an SQLite database without stepsim's calibration tables (it has: " + list +
                     "); refusing to use it as the calibration store");
  }
  Stmt v(db, "SELECT version FROM schema_version", path);
  if (!v.step(path, "cannot read")) throw InputError(path + ": schema_version is empty; not a stepsim calibration store");
  const int64_t version = sqlite3_column_int64(v.get(), 0);
  if (version != kCalibrationSchemaVersion) {
    throw InputError(path + ": calibration store schema version " + std::to_string(version) + "; this stepsim reads version " +
                     std::to_string(kCalibrationSchemaVersion));
  }
  Stmt cols(db, "SELECT name FROM pragma_table_info('nccl_calibration')", path);
  std::set<std::string> have;
  while (cols.step(path, "cannot read")) have.insert(cols.text(0));
  const std::string wanted = kColumns;
  size_t b = 0;
  while (b < wanted.size()) {
    size_t e = wanted.find(',', b);
    if (e == std::string::npos) e = wanted.size();
    std::string name = wanted.substr(b, e - b);
    name.erase(0, name.find_first_not_of(' '));
    if (!have.count(name)) throw InputError(path + ": table nccl_calibration has no column '" + name + "'");
    b = e + 1;
  }
  return true;
}

sqlite3* open_db(const std::string& path, int flags) {
  // A directory or a device (/dev/zero) is not a store: SQLite would answer "disk I/O error" or read zeros as one.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    throw InputError(path + ": the calibration store must be a regular file (this is " +
                     (std::filesystem::is_directory(st) ? "a directory" : "not a regular file") + ")");
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw InputError(path + ": cannot open the calibration store: " + msg);
  }
  sqlite3_busy_timeout(db, 5000);  // another stepsim writing at the same moment
  return db;
}

CalibrationRow read_row(Stmt& s) {
  sqlite3_stmt* q = s.get();
  CalibrationRow r;
  r.id = sqlite3_column_int64(q, 0);
  r.gpu = s.text(1);
  r.interconnect = s.text(2);
  r.nodes = sqlite3_column_int(q, 3);
  r.gpus_per_node = sqlite3_column_int(q, 4);
  r.nccl_version = s.text(5);
  r.collective = s.text(6);
  r.chunk_bytes = static_cast<uint64_t>(std::max<int64_t>(0, sqlite3_column_int64(q, 7)));
  r.alpha_us = sqlite3_column_double(q, 8);
  r.beta_us = sqlite3_column_double(q, 9);
  r.gamma_us = sqlite3_column_double(q, 10);
  r.intra_efficiency = sqlite3_column_double(q, 11);
  r.inter_efficiency = sqlite3_column_double(q, 12);
  r.reduce_GBps = sqlite3_column_double(q, 13);
  r.fitted = s.text(14);
  r.points = sqlite3_column_int(q, 15);
  r.mean_abs_error_pct = sqlite3_column_double(q, 16);
  r.max_abs_error_pct = sqlite3_column_double(q, 17);
  if (sqlite3_column_type(q, 18) != SQLITE_NULL) r.cv_mean_abs_error_pct = sqlite3_column_double(q, 18);
  r.source = s.text(19);
  r.created = s.text(20);
  return r;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

CalibrationStore CalibrationStore::open(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) throw InputError(path + ": cannot create the directory " + parent.string() + ": " + ec.message());
  CalibrationStore store(open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE), path);
  // The schema is checked and created inside one write transaction: two stepsim processes opening a new store at
  // the same moment serialise on it (the busy timeout waits for the other), and the second finds the tables made.
  exec(store.db_, "BEGIN IMMEDIATE", path, "cannot write");
  try {
    if (!check_schema(store.db_, path)) {
      exec(store.db_, kSchema, path, "cannot create");
      Stmt v(store.db_, "INSERT INTO schema_version (version) VALUES (?1)", path);
      v.bind(1, static_cast<int64_t>(kCalibrationSchemaVersion));
      v.step(path, "cannot write");
    }
    exec(store.db_, kComputeSchema, path, "cannot create");
    // attention_scale came after the table: a store made before it gains the column, its rows reading 1.
    if (!has_column(store.db_, path, "compute_calibration", "attention_scale")) {
      exec(store.db_, "ALTER TABLE compute_calibration ADD COLUMN attention_scale REAL NOT NULL DEFAULT 1", path,
           "cannot write");
    }
    // The per-kind bands came later still: three columns per kind, runs 0 = no band of that kind.
    for (const char* kind : kCalibrationKinds) {
      const std::string k(kind);
      if (has_column(store.db_, path, "compute_calibration", k + "_runs")) continue;
      for (const std::string& column : {k + "_interval_low REAL NOT NULL DEFAULT 0",
                                        k + "_interval_high REAL NOT NULL DEFAULT 0", k + "_runs INTEGER NOT NULL DEFAULT 0"})
        exec(store.db_, ("ALTER TABLE compute_calibration ADD COLUMN " + column).c_str(), path, "cannot write");
    }
    exec(store.db_, "COMMIT", path, "cannot write");
  } catch (...) {
    sqlite3_exec(store.db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return store;
}

int64_t CalibrationStore::remove(const std::vector<int64_t>& ids, const std::vector<std::string>& archs) {
  int64_t removed = 0;
  exec(db_, "BEGIN IMMEDIATE", path_, "cannot write");
  try {
    for (int64_t id : ids) {
      Stmt s(db_, "DELETE FROM nccl_calibration WHERE id = ?1", path_);
      s.bind(1, id);
      s.step(path_, "cannot write");
      if (sqlite3_changes(db_) == 0) throw InputError(path_ + ": no NCCL calibration row " + std::to_string(id));
      removed += sqlite3_changes(db_);
    }
    const std::vector<std::string> tables = table_names(db_, path_);
    const bool compute = std::find(tables.begin(), tables.end(), "compute_calibration") != tables.end();
    for (const std::string& arch : archs) {
      int64_t changed = 0;
      if (compute) {
        Stmt s(db_, "DELETE FROM compute_calibration WHERE arch = ?1", path_);
        s.bind(1, arch);
        s.step(path_, "cannot write");
        changed = sqlite3_changes(db_);
      }
      if (changed == 0) throw InputError(path_ + ": no compute calibration of architecture " + spec::printable(arch));
      removed += changed;
    }
    exec(db_, "COMMIT", path_, "cannot write");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return removed;
}

int64_t CalibrationStore::insert_compute(const ComputeCalibrationRow& r) {
  std::string columns, values;
  int next = 11;
  for (const char* kind : kCalibrationKinds) {
    const std::string k(kind);
    columns += ", " + k + "_interval_low, " + k + "_interval_high, " + k + "_runs";
    for (int i = 0; i < 3; ++i) values += ", ?" + std::to_string(next++);
  }
  Stmt s(db_,
         "INSERT INTO compute_calibration (arch, sustained_clock, runs, mape_pct, loo_mape_pct, interval_low, "
         "interval_high, source, created, attention_scale" + columns +
             ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10" + values + ")",
         path_);
  s.bind(1, r.arch);
  s.bind(2, r.sustained_clock);
  s.bind(3, static_cast<int64_t>(r.runs));
  s.bind(4, r.mape_pct);
  s.bind(5, r.loo_mape_pct);
  s.bind(6, r.interval_low);
  s.bind(7, r.interval_high);
  s.bind(8, r.source);
  s.bind(9, r.created);
  s.bind(10, r.attention_scale);
  next = 11;
  for (const char* kind : kCalibrationKinds) {
    const auto it = r.kind_intervals.find(kind);
    const KindInterval k = it == r.kind_intervals.end() ? KindInterval{} : it->second;
    s.bind(next++, k.low);
    s.bind(next++, k.high);
    s.bind(next++, static_cast<int64_t>(k.runs));
  }
  s.step(path_, "cannot write");
  return sqlite3_last_insert_rowid(db_);
}

std::optional<ComputeCalibrationRow> CalibrationStore::lookup_compute(const std::string& arch) const {
  const std::vector<std::string> tables = table_names(db_, path_);
  if (std::find(tables.begin(), tables.end(), "compute_calibration") == tables.end()) return std::nullopt;
  // A store written before attention_scale existed (opened read-only, so not migrated) reads as 1.
  const bool scaled = has_column(db_, path_, "compute_calibration", "attention_scale");
  // Likewise a store from before the per-kind bands reads as having none.
  std::string kind_columns;
  for (const char* kind : kCalibrationKinds) {
    const std::string k(kind);
    kind_columns += has_column(db_, path_, "compute_calibration", k + "_runs")
                        ? ", " + k + "_interval_low, " + k + "_interval_high, " + k + "_runs"
                        : std::string(", 0, 0, 0");
  }
  Stmt s(db_,
         std::string("SELECT id, arch, sustained_clock, runs, mape_pct, loo_mape_pct, interval_low, interval_high, "
                     "source, created, ") +
             (scaled ? "attention_scale" : "1.0") + kind_columns +
             " FROM compute_calibration WHERE arch = ?1 ORDER BY id DESC LIMIT 1",
         path_);
  s.bind(1, arch);
  if (!s.step(path_, "cannot read")) return std::nullopt;
  ComputeCalibrationRow r;
  r.id = sqlite3_column_int64(s.get(), 0);
  r.arch = s.text(1);
  r.sustained_clock = sqlite3_column_double(s.get(), 2);
  r.runs = sqlite3_column_int(s.get(), 3);
  r.mape_pct = sqlite3_column_double(s.get(), 4);
  r.loo_mape_pct = sqlite3_column_double(s.get(), 5);
  r.interval_low = sqlite3_column_double(s.get(), 6);
  r.interval_high = sqlite3_column_double(s.get(), 7);
  r.source = s.text(8);
  r.created = s.text(9);
  r.attention_scale = sqlite3_column_double(s.get(), 10);
  int column = 11;
  for (const char* kind : kCalibrationKinds) {
    KindInterval k;
    k.low = sqlite3_column_double(s.get(), column++);
    k.high = sqlite3_column_double(s.get(), column++);
    k.runs = sqlite3_column_int(s.get(), column++);
    if (k.runs <= 0) continue;
    if (!(k.low > -1 && k.low <= k.high && k.high < 10)) {
      throw InputError(path_ + ": compute_calibration row " + std::to_string(r.id) + " has a " + kind + " interval [" +
                       fmt(k.low) + ", " + fmt(k.high) + "], outside -1 < low <= high < 10");
    }
    r.kind_intervals[kind] = k;
  }
  if (!(r.sustained_clock > 0 && r.sustained_clock <= 2)) {
    throw InputError(path_ + ": compute_calibration row " + std::to_string(r.id) + " has sustained_clock " +
                     fmt(r.sustained_clock) + ", outside (0, 2]");
  }
  if (!(r.attention_scale > 0 && r.attention_scale <= 4)) {
    throw InputError(path_ + ": compute_calibration row " + std::to_string(r.id) + " has attention_scale " +
                     fmt(r.attention_scale) + ", outside (0, 4]");
  }
  return r;
}

std::optional<CalibrationStore> CalibrationStore::open_existing(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  // A writer killed inside a commit leaves a hot journal beside the store; only a connection that may write can roll
  // it back (SQLite does so on the first read), so a reader opens read-write (never creating) wherever it may, and
  // read-only where it may not (the read then fails with the reason, below).
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const bool writable = access(path.c_str(), W_OK) == 0 && access(dir.empty() ? "." : dir.c_str(), W_OK) == 0;
  if (!writable && std::filesystem::file_size(path + "-journal", ec) > 0 && !ec) {
    throw InputError(path + ": a write to the calibration store was interrupted (hot journal " + path +
                     "-journal) and this user may not write the store to roll it back; run any stepsim command as "
                     "its owner once (e.g. stepsim calibrate list)");
  }
  CalibrationStore store(open_db(path, writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY), path);
  if (!check_schema(store.db_, path)) return std::nullopt;  // an empty database holds no calibrations
  return store;
}

CalibrationStore::CalibrationStore(CalibrationStore&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) {
  o.db_ = nullptr;
}

CalibrationStore& CalibrationStore::operator=(CalibrationStore&& o) noexcept {
  if (this != &o) {
    sqlite3_close(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    o.db_ = nullptr;
  }
  return *this;
}

CalibrationStore::~CalibrationStore() { sqlite3_close(db_); }

std::vector<int64_t> CalibrationStore::insert(const std::vector<CalibrationRow>& rows) {
  std::vector<int64_t> ids;
  exec(db_, "BEGIN IMMEDIATE", path_, "cannot write");
  try {
    Stmt s(db_,
           "INSERT INTO nccl_calibration (gpu, interconnect, nodes, gpus_per_node, nccl_version, collective, "
           "chunk_bytes, alpha_us, beta_us, gamma_us, intra_efficiency, inter_efficiency, reduce_GBps, fitted, points, "
           "mean_abs_error_pct, max_abs_error_pct, cv_mean_abs_error_pct, source, created) VALUES "
           "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
           path_);
    for (const auto& r : rows) {
      sqlite3_reset(s.get());
      s.bind(1, r.gpu);
      s.bind(2, r.interconnect);
      s.bind(3, static_cast<int64_t>(r.nodes));
      s.bind(4, static_cast<int64_t>(r.gpus_per_node));
      s.bind(5, r.nccl_version);
      s.bind(6, r.collective);
      s.bind(7, static_cast<int64_t>(r.chunk_bytes));
      s.bind(8, r.alpha_us);
      s.bind(9, r.beta_us);
      s.bind(10, r.gamma_us);
      s.bind(11, r.intra_efficiency);
      s.bind(12, r.inter_efficiency);
      s.bind(13, r.reduce_GBps);
      s.bind(14, r.fitted);
      s.bind(15, static_cast<int64_t>(r.points));
      s.bind(16, r.mean_abs_error_pct);
      s.bind(17, r.max_abs_error_pct);
      if (r.cv_mean_abs_error_pct) s.bind(18, *r.cv_mean_abs_error_pct);
      else sqlite3_bind_null(s.get(), 18);
      s.bind(19, r.source);
      s.bind(20, r.created);
      s.step(path_, "cannot write");
      ids.push_back(sqlite3_last_insert_rowid(db_));
    }
    exec(db_, "COMMIT", path_, "cannot write");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return ids;
}

std::vector<CalibrationRow> CalibrationStore::select(const std::string& clauses,
                                                     const std::vector<std::string>& args) const {
  Stmt s(db_, std::string("SELECT ") + kColumns + " FROM nccl_calibration" + clauses, path_);
  for (size_t i = 0; i < args.size(); ++i) s.bind(static_cast<int>(i + 1), args[i]);
  std::vector<CalibrationRow> out;
  while (s.step(path_, "cannot read")) out.push_back(read_row(s));
  return out;
}

std::vector<CalibrationRow> CalibrationStore::query(const std::string& gpu, const std::string& interconnect,
                                                    const std::optional<std::string>& nccl_version) const {
  if (nccl_version) {
    return select(std::string(" WHERE gpu = ?1 AND interconnect = ?2 AND nccl_version = ?3") + kOrder,
                  {gpu, interconnect, *nccl_version});
  }
  return select(std::string(" WHERE gpu = ?1 AND interconnect = ?2") + kOrder, {gpu, interconnect});
}

std::vector<CalibrationRow> CalibrationStore::all() const {
  return select(" ORDER BY gpu, interconnect, nodes, collective, chunk_bytes, nccl_version, id", {});
}

std::optional<CalibrationRow> CalibrationStore::lookup(const std::string& gpu, const std::string& interconnect,
                                                       int nodes, const std::string& nccl_version,
                                                       const std::string& collective, uint64_t chunk_bytes) const {
  std::vector<CalibrationRow> rows;
  for (const std::string& c : {collective, std::string("all")}) {
    for (auto& r : query(gpu, interconnect)) {
      if (r.collective == c && r.chunk_bytes == chunk_bytes) rows.push_back(std::move(r));
    }
    if (!rows.empty()) break;
  }
  if (rows.empty()) return std::nullopt;
  // Node class (rows are sorted by nodes): the largest <= nodes, else the smallest.
  int cls = rows.front().nodes;
  for (const auto& r : rows) {
    if (r.nodes <= nodes) cls = r.nodes;
  }
  const CalibrationRow* best = nullptr;
  auto rank = [&](const CalibrationRow& r) { return std::pair(!nccl_version.empty() && r.nccl_version == nccl_version, r.id); };
  for (const auto& r : rows) {
    if (r.nodes == cls && (!best || rank(r) > rank(*best))) best = &r;
  }
  return *best;
}

std::string default_calibration_store_path() {
  if (const char* env = std::getenv("STEPSIM_CALIBRATION_DB"); env && *env) return env;
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/stepsim/calibration.sqlite";
  return "stepsim-calibration.sqlite";
}

std::string interconnect_key(const spec::ClusterSpec& c) {
  return "intra=" + fmt(c.intra_node.bandwidth_GBps) + "GBps,inter=" + fmt(c.inter_node.bandwidth_GBps * 8) + "Gbps";
}

CalibrationKey calibration_key(const GpuSpec& gpu, const spec::ClusterSpec& c) {
  return {gpu.name, interconnect_key(c)};
}

}  // namespace stepsim::hw
