#pragma once
// Nsight Systems SQLite export (`nsys export --type sqlite`) reading: kernels of CUPTI_ACTIVITY_KIND_KERNEL with
// their names from StringIds, launch configuration, stream and correlation id; NVTX_EVENTS ranges. The schema
// is the real one (export schema 2.9 of nsys 2022.2 through 3.13 of nsys 2024.5); globalPid/globalTid are
// serialized GlobalIds: pid = (id >> 24) & 0xFFFFFF, tid = id & 0xFFFFFF.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/ingest/profile/nccl_kernel_name.hpp"

namespace stepsim::profile {

struct NsysKernel {
  int db = 0;                 // index of the file in the list given to the reader
  int64_t start_ns = 0, end_ns = 0;  // session-relative ns (GPU timestamps as nsys exports them)
  int device = -1;
  int64_t stream = -1, correlation = -1, context = -1;
  int64_t pid = -1;
  std::string name;  // demangled name (shortName when demangled is missing)
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int registers = 0;
  int64_t static_smem = 0, dynamic_smem = 0, local_mem_total = 0;
  std::optional<NcclKernelName> nccl;  // set for NCCL kernels
};

struct NvtxRange {
  int db = 0;
  int64_t start_ns = 0, end_ns = -1;  // end -1 for marks
  int event_type = 0;                 // 59 push/pop, 60 start/end, 34 mark (nsys NvtxEventType)
  std::string text;
  int64_t pid = -1, tid = -1;
};

struct NsysDb {
  std::string path;
  int64_t kernel_rows = 0;  // every kernel in the export, NCCL or not
  std::vector<NsysKernel> kernels;  // NCCL kernels only unless read with all_kernels; start order
  std::vector<NvtxRange> nvtx;      // only when read with nvtx
  int64_t session_start_utc_ns = -1;  // TARGET_INFO_SESSION_START_TIME when present
  std::vector<std::string> gpus;      // TARGET_INFO_GPU names when present
};

struct NsysReadOptions {
  bool all_kernels = false;  // keep non-NCCL kernels too
  bool nvtx = false;
};

// Limits: at most kMaxNsysRows kernel rows and as many NVTX rows; strings are cut at kMaxNsysString bytes.
inline constexpr int64_t kMaxNsysRows = 100'000'000;
inline constexpr size_t kMaxNsysString = 4096;

// InputError naming the file for a missing file, a file that is not SQLite, a corrupt one, or an SQLite
// database without the kernel table and columns of an Nsight Systems export.
NsysDb read_nsys_db(const std::string& path, int db_index = 0, const NsysReadOptions& opt = {});
// The same from the bytes of a database (fuzzing; files too large are refused by read_nsys_db itself).
NsysDb read_nsys_db_bytes(std::string_view bytes, const std::string& name, const NsysReadOptions& opt = {});

inline int64_t pid_of_global_id(int64_t global_id) { return (global_id >> 24) & 0xFFFFFF; }
inline int64_t tid_of_global_id(int64_t global_id) { return global_id & 0xFFFFFF; }

}  // namespace stepsim::profile
