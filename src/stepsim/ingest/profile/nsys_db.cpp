#include "stepsim/ingest/profile/nsys_db.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"

namespace stepsim::profile {
namespace {

[[noreturn]] void fail(sqlite3* db, const std::string& path, const std::string& what) {
  const int code = db ? sqlite3_errcode(db) : SQLITE_ERROR;
  const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
  if (code == SQLITE_NOTADB) throw InputError(path + ": not an SQLite database (" + msg + "); --nsys wants `nsys export --type sqlite` output");
  if (code == SQLITE_CORRUPT) throw InputError(path + ": corrupt SQLite database (" + msg + ") while " + what);
  throw InputError(path + ": cannot read the Nsight Systems export while " + what + ": " + msg);
}

struct Db {
  sqlite3* h = nullptr;
  ~Db() { sqlite3_close(h); }
};

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql, const std::string& path, const std::string& what)
      : db_(db), path_(path), what_(what) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK) fail(db, path, what);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, path_, what_);
  }
  int64_t i64(int c) { return sqlite3_column_int64(s_, c); }
  bool null(int c) { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  // Bytes as stored: some StringIds values are not valid UTF-8.
  std::string text(int c) {
    const auto* t = static_cast<const char*>(sqlite3_column_blob(s_, c));
    const int n = sqlite3_column_bytes(s_, c);
    return t ? std::string(t, std::min<size_t>(static_cast<size_t>(n), kMaxNsysString)) : std::string();
  }
  void bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  std::string path_, what_;
};

std::set<std::string> columns(sqlite3* db, const std::string& table, const std::string& path) {
  std::set<std::string> out;
  Stmt s(db, "SELECT name FROM pragma_table_info(?1)", path, "listing the columns of " + table);
  s.bind(1, table);
  while (s.step()) out.insert(s.text(0));
  return out;
}

bool has_table(sqlite3* db, const std::string& table, const std::string& path) {
  Stmt s(db, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?1", path, "listing the tables");
  s.bind(1, table);
  return s.step();
}

void require_columns(const std::set<std::string>& have, const std::string& table,
                     std::initializer_list<const char*> names, const std::string& path) {
  for (const char* n : names)
    if (!have.count(n))
      throw InputError(path + ": table " + table + " has no column '" + n +
                       "'; not an Nsight Systems SQLite export (nsys export --type sqlite)");
}

NsysDb read_open(sqlite3* db, const std::string& path, int db_index, const NsysReadOptions& opt) {
  NsysDb out;
  out.path = path;
  // Touch the schema first: a file that is not SQLite fails here with SQLITE_NOTADB.
  if (!has_table(db, "CUPTI_ACTIVITY_KIND_KERNEL", path)) {
    if (!has_table(db, "StringIds", path))
      throw InputError(path + ": an SQLite database without the tables CUPTI_ACTIVITY_KIND_KERNEL and StringIds; "
                       "not an Nsight Systems SQLite export (nsys export --type sqlite)");
    return out;  // a real export of a run without GPU kernels (e.g. CPU-only profiling)
  }
  if (!has_table(db, "StringIds", path))
    throw InputError(path + ": table StringIds is missing; not an Nsight Systems SQLite export");
  const auto kcols = columns(db, "CUPTI_ACTIVITY_KIND_KERNEL", path);
  require_columns(kcols, "CUPTI_ACTIVITY_KIND_KERNEL",
                  {"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "demangledName", "shortName",
                   "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"},
                  path);
  require_columns(columns(db, "StringIds", path), "StringIds", {"id", "value"}, path);
  auto opt_col = [&](const char* c) { return kcols.count(c) ? std::string("k.") + c : std::string("0"); };
  const std::string sql =
      "SELECT k.start, k.end, k.deviceId, k.streamId, k.correlationId, k.globalPid, "
      "COALESCE(d.value, s.value, ''), k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, " +
      opt_col("registersPerThread") + ", " + opt_col("staticSharedMemory") + ", " + opt_col("dynamicSharedMemory") +
      ", " + opt_col("localMemoryTotal") + ", " + opt_col("contextId") +
      " FROM CUPTI_ACTIVITY_KIND_KERNEL AS k LEFT JOIN StringIds AS d ON d.id = k.demangledName "
      "LEFT JOIN StringIds AS s ON s.id = k.shortName ORDER BY k.start, k.rowid";
  Stmt s(db, sql, path, "reading CUPTI_ACTIVITY_KIND_KERNEL");
  while (s.step()) {
    if (++out.kernel_rows > kMaxNsysRows)
      throw InputError(path + ": more than " + std::to_string(kMaxNsysRows) + " kernel rows (the limit)");
    NsysKernel k;
    k.name = s.text(6);
    k.nccl = parse_nccl_kernel_name(k.name);
    if (!k.nccl && !opt.all_kernels) continue;
    k.db = db_index;
    k.start_ns = s.i64(0);
    k.end_ns = s.i64(1);
    if (k.end_ns < k.start_ns)
      throw InputError(path + ": CUPTI_ACTIVITY_KIND_KERNEL row " + std::to_string(out.kernel_rows) +
                       ": end before start");
    k.device = static_cast<int>(s.i64(2));
    k.stream = s.i64(3);
    k.correlation = s.null(4) ? -1 : s.i64(4);
    k.pid = s.null(5) ? -1 : pid_of_global_id(s.i64(5));
    for (int i = 0; i < 3; ++i) {
      k.grid[i] = static_cast<int>(std::clamp<int64_t>(s.i64(7 + i), 0, INT32_MAX));
      k.block[i] = static_cast<int>(std::clamp<int64_t>(s.i64(10 + i), 0, INT32_MAX));
    }
    k.registers = static_cast<int>(std::clamp<int64_t>(s.i64(13), 0, INT32_MAX));
    k.static_smem = s.i64(14);
    k.dynamic_smem = s.i64(15);
    k.local_mem_total = s.i64(16);
    k.context = s.i64(17);
    out.kernels.push_back(std::move(k));
  }
  // SQLite orders mixed-type columns its own way; the integer values decide.
  std::stable_sort(out.kernels.begin(), out.kernels.end(),
                   [](const NsysKernel& a, const NsysKernel& b) { return a.start_ns < b.start_ns; });
  if (opt.nvtx && has_table(db, "NVTX_EVENTS", path)) {
    const auto ncols = columns(db, "NVTX_EVENTS", path);
    require_columns(ncols, "NVTX_EVENTS", {"start", "end", "eventType", "text", "globalTid"}, path);
    const std::string text = ncols.count("textId") ? "COALESCE(n.text, t.value, '')" : "COALESCE(n.text, '')";
    const std::string join = ncols.count("textId") ? " LEFT JOIN StringIds AS t ON t.id = n.textId" : "";
    Stmt q(db, "SELECT n.start, n.end, n.eventType, " + text + ", n.globalTid FROM NVTX_EVENTS AS n" + join +
                   " ORDER BY n.start, n.rowid",
           path, "reading NVTX_EVENTS");
    while (q.step()) {
      if (static_cast<int64_t>(out.nvtx.size()) >= kMaxNsysRows)
        throw InputError(path + ": more than " + std::to_string(kMaxNsysRows) + " NVTX rows (the limit)");
      NvtxRange r;
      r.db = db_index;
      r.start_ns = q.i64(0);
      r.end_ns = q.null(1) ? -1 : q.i64(1);
      r.event_type = static_cast<int>(q.i64(2));
      r.text = q.text(3);
      if (!q.null(4)) {
        r.pid = pid_of_global_id(q.i64(4));
        r.tid = tid_of_global_id(q.i64(4));
      }
      out.nvtx.push_back(std::move(r));
    }
  }
  if (has_table(db, "TARGET_INFO_SESSION_START_TIME", path) &&
      columns(db, "TARGET_INFO_SESSION_START_TIME", path).count("utcEpochNs")) {
    Stmt q(db, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1", path, "reading the session start");
    if (q.step() && !q.null(0)) out.session_start_utc_ns = q.i64(0);
  }
  if (has_table(db, "TARGET_INFO_GPU", path) && columns(db, "TARGET_INFO_GPU", path).count("name")) {
    Stmt q(db, "SELECT name FROM TARGET_INFO_GPU ORDER BY rowid LIMIT 4096", path, "reading TARGET_INFO_GPU");
    while (q.step()) out.gpus.push_back(q.text(0));
  }
  return out;
}

}  // namespace

NsysDb read_nsys_db(const std::string& path, int db_index, const NsysReadOptions& opt) {
  std::error_code ec;
  spec::require_existing_file(path, "the Nsight Systems SQLite export (--nsys)");
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(path + ": cannot read the Nsight Systems SQLite export (--nsys): not a regular file (a device, "
                     "pipe or socket)");
  Db db;
  // Read-only and immutable: never writes a journal next to the user's file, never creates one.
  if (sqlite3_open_v2(path.c_str(), &db.h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) fail(db.h, path, "opening");
  sqlite3_limit(db.h, SQLITE_LIMIT_LENGTH, 1 << 24);
  return read_open(db.h, path, db_index, opt);
}

NsysDb read_nsys_db_bytes(std::string_view bytes, const std::string& name, const NsysReadOptions& opt) {
  Db db;
  if (sqlite3_open_v2(":memory:", &db.h, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) fail(db.h, name, "opening");
  auto* buf = static_cast<unsigned char*>(sqlite3_malloc64(bytes.size() ? bytes.size() : 1));
  if (!buf) throw InputError(name + ": out of memory reading the database");
  if (!bytes.empty()) std::memcpy(buf, bytes.data(), bytes.size());
  if (sqlite3_deserialize(db.h, "main", buf, static_cast<sqlite3_int64>(bytes.size()),
                          static_cast<sqlite3_int64>(bytes.size()),
                          SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY) != SQLITE_OK)
    fail(db.h, name, "opening");
  sqlite3_limit(db.h, SQLITE_LIMIT_LENGTH, 1 << 24);
  return read_open(db.h, name, 0, opt);
}

}  // namespace stepsim::profile
