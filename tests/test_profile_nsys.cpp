// Nsight Systems SQLite reading: the two real exports in ../shared/data/real/pipit (counts by the sqlite3 CLI,
// queries in the comments), a synthetic export with NCCL kernels built here with the real schema's column names
// and types (CUPTI_ACTIVITY_KIND_KERNEL, StringIds, NVTX_EVENTS, as in `.schema` of those exports), and
// corrupt/foreign databases.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <string>

#include "stepsim/ingest/profile/nsys_db.hpp"
#include "stepsim/io/input_error.hpp"
#include "test_util.hpp"

namespace stepsim::profile {
namespace {

std::string pipit(const std::string& f) { return std::string(STEPSIM_SHARED_DIR) + "/data/real/pipit/" + f; }

std::string error_of(const std::string& path) {
  try {
    (void)read_nsys_db(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

// sqlite3 FILE "select count(*) from CUPTI_ACTIVITY_KIND_KERNEL" → 5; NVTX_EVENTS → 24; the kernel is
// saxpy(double *, double *, double *, double, int) with gridX 2, blockX 512, start 924922186, end 942626994,
// pid (globalPid>>24)&0xFFFFFF = 1230493, stream 7; one TARGET_INFO_GPU row; utcEpochNs 1687813257637297504.
TEST(ProfileNsys, RealSaxpyExport) {
  const NsysDb db = read_nsys_db(pipit("saxpy-mpi-cuda_nsys_perlmutter0.sqlite"), 0, {.all_kernels = true, .nvtx = true});
  EXPECT_EQ(db.kernel_rows, 5);
  ASSERT_EQ(db.kernels.size(), 5u);
  const NsysKernel& k = db.kernels[0];
  EXPECT_EQ(k.name, "saxpy(double *, double *, double *, double, int)");
  EXPECT_FALSE(k.nccl);
  EXPECT_EQ(k.grid[0], 2);
  EXPECT_EQ(k.block[0], 512);
  EXPECT_EQ(k.start_ns, 924922186);
  EXPECT_EQ(k.end_ns, 942626994);
  EXPECT_EQ(k.pid, 1230493);
  EXPECT_EQ(k.stream, 7);
  EXPECT_EQ(db.nvtx.size(), 24u);
  int mpi_rank_marks = 0;
  for (const auto& r : db.nvtx) mpi_rank_marks += r.text.starts_with("MPI Rank");
  EXPECT_EQ(mpi_rank_marks, 1);
  EXPECT_EQ(db.gpus.size(), 1u);
  EXPECT_EQ(db.session_start_utc_ns, 1687813257637297504);
  // Without all_kernels only NCCL kernels are kept: none here.
  EXPECT_TRUE(read_nsys_db(pipit("saxpy-mpi-cuda_nsys_perlmutter0.sqlite")).kernels.empty());
}

// Schema 3.13.2 (greenContextId column, no NVTX table): 1312 kernels, 4 GPUs, pid 1701896, no NCCL kernel.
TEST(ProfileNsys, RealCloverleafExport) {
  const NsysDb db = read_nsys_db(pipit("perlmutter-cloverleaf-cuda.sqlite"), 3, {.all_kernels = true, .nvtx = true});
  EXPECT_EQ(db.kernel_rows, 1312);
  EXPECT_EQ(db.kernels.size(), 1312u);
  EXPECT_EQ(db.kernels[0].pid, 1701896);
  EXPECT_EQ(db.kernels[0].db, 3);
  EXPECT_TRUE(db.nvtx.empty());
  EXPECT_EQ(db.gpus.size(), 4u);
  for (size_t i = 1; i < db.kernels.size(); ++i) ASSERT_LE(db.kernels[i - 1].start_ns, db.kernels[i].start_ns);
}

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
}

// Column names and types of the real export (nsys 2024.5, schema 3.13.2), trimmed of comments.
const char* kSchema = R"(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL,
  gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
  blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
  sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
)";

// globalPid of pid P on host 0: P << 24 (GlobalId serialization: hw id << 56 | vm << 48 | pid << 24 | tid).
std::string make_fixture() {
  const std::string path = test::temp_dir() + "nccl-fixture.sqlite";
  std::remove(path.c_str());
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  exec(db, kSchema);
  exec(db,
       "INSERT INTO StringIds VALUES (1, 'ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),"
       "(2, 'ncclDevKernel_AllReduce_Sum_f16_RING_LL'), (3, 'ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)'),"
       "(4, 'ncclDevKernel_SendRecv'), (5, 'ampere_sgemm_128x64_nn'), (6, 'iteration 1')");
  // Two NCCL kernels and a GEMM of pid 4242 on device 0; the second NCCL kernel first in rowid order.
  exec(db,
       "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid,"
       " demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,"
       " staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) VALUES"
       " (5000, 7000, 0, 1, 31, 12, 4242 << 24, 3, 4, 64, 4, 1, 1, 640, 1, 1, 100, 0, 0, 0, 2),"
       " (1000, 1620, 0, 1, 31, 11, 4242 << 24, 1, 2, 96, 2, 1, 1, 544, 1, 1, 7104, 82240, 0, 280756224, 1),"
       " (1700, 1800, 0, 1, 7, 10, 4242 << 24, 5, 5, 128, 80, 1, 1, 256, 1, 1, 0, 0, 0, 0, 3)");
  exec(db, "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId) VALUES"
           " (900, 8000, 59, NULL, (4242 << 24) | 4243, 6), (950, NULL, 34, 'mark', (4242 << 24) | 4243, NULL)");
  exec(db, "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '')");
  sqlite3_close(db);
  return path;
}

TEST(ProfileNsys, SyntheticNcclExport) {
  const NsysDb db = read_nsys_db(make_fixture(), 1, {.nvtx = true});
  EXPECT_EQ(db.kernel_rows, 3);
  ASSERT_EQ(db.kernels.size(), 2u);  // the GEMM is not an NCCL kernel
  const NsysKernel& ar = db.kernels[0];
  EXPECT_EQ(ar.start_ns, 1000);
  EXPECT_EQ(ar.end_ns, 1620);
  EXPECT_EQ(ar.pid, 4242);
  EXPECT_EQ(ar.stream, 31);
  EXPECT_EQ(ar.correlation, 11);
  EXPECT_EQ(ar.grid[0], 2);
  EXPECT_EQ(ar.block[0], 544);
  EXPECT_EQ(ar.registers, 96);
  EXPECT_EQ(ar.static_smem, 7104);
  EXPECT_EQ(ar.dynamic_smem, 82240);
  EXPECT_EQ(ar.local_mem_total, 280756224);
  ASSERT_TRUE(ar.nccl);
  EXPECT_EQ(ar.nccl->op, NcclOp::AllReduce);
  EXPECT_EQ(ar.nccl->datatype, 6);
  EXPECT_EQ(db.kernels[1].nccl->op, NcclOp::SendRecv);
  ASSERT_EQ(db.nvtx.size(), 2u);
  EXPECT_EQ(db.nvtx[0].text, "iteration 1");  // through textId
  EXPECT_EQ(db.nvtx[0].pid, 4242);
  EXPECT_EQ(db.nvtx[0].tid, 4243);
  EXPECT_EQ(db.nvtx[1].text, "mark");
  EXPECT_EQ(db.nvtx[1].end_ns, -1);
  EXPECT_EQ(db.session_start_utc_ns, 1700000000000000000);
}

TEST(ProfileNsys, CorruptAndForeignDatabases) {
  const std::string garbage = test::write_temp("garbage.sqlite", std::string(4096, 'x'));
  EXPECT_NE(error_of(garbage).find("not an SQLite database"), std::string::npos) << error_of(garbage);
  EXPECT_NE(error_of(garbage).find("garbage.sqlite"), std::string::npos);
  // A real export cut after 64 KiB: SQLite reports it as corrupt (or malformed) somewhere in the read.
  {
    std::ifstream in(pipit("perlmutter-cloverleaf-cuda.sqlite"), std::ios::binary);
    std::string head(65536, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    const std::string cut = test::write_temp("cut.sqlite", head);
    EXPECT_NE(error_of(cut).find("cut.sqlite"), std::string::npos) << error_of(cut);
  }
  // A foreign SQLite database: a clear message, not a crash.
  const std::string foreign = test::temp_dir() + "foreign.sqlite";
  std::remove(foreign.c_str());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
  exec(db, "CREATE TABLE t (a INTEGER)");
  sqlite3_close(db);
  EXPECT_NE(error_of(foreign).find("not an Nsight Systems SQLite export"), std::string::npos) << error_of(foreign);
  EXPECT_NE(error_of("/nonexistent.sqlite").find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace stepsim::profile
