#pragma once
// The overlap-slowdown dataset: one CSV row per (compute kernel, communication kernel) pair measured alone and
// side by side on one GPU, with Echo Table 4's features and the measured slowdown. Written by
// tools/overlap-dataset, read by `stepsim slowdown train|eval`. Columns, units and rules: docs/SLOWDOWN-MODEL.md.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::overlap {

// Limits: bigger inputs are refused, not parsed.
constexpr size_t kMaxDatasetBytes = 64u << 20;
constexpr size_t kMaxDatasetRows = 1000000;

struct SlowdownRow {
  int line = 0;             // 1-based line in the file (0 for rows built in code)
  std::string gpu;          // GPU the row was measured on, as written (a stepsim catalog name or alias)
  std::string kernel;       // optional kernel name, informational
  std::string kernel_type;  // compute category (workload name_of(ComputeCategory)) or any other word, lower case
  double isolated_us = 0;   // compute kernel alone, microseconds
  // Nsight Compute metrics of the kernel alone, percent 0..100; NaN = not measured.
  double sm_throughput_pct = NAN;
  double memory_throughput_pct = NAN;
  double dram_throughput_pct = NAN;
  double achieved_occupancy_pct = NAN;
  double l1_hit_rate_pct = NAN;
  double l2_hit_rate_pct = NAN;
  std::string collective;  // all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | reduce | sendrecv
  std::string algorithm;   // ring | tree | nvls | nvls_tree | pat | direct | collnet_direct | collnet_chain; "" unknown
  std::string protocol;    // LL | LL128 | Simple; "" unknown
  uint64_t bucket_bytes = 0;  // message size of the communication kernel (nccl-tests' S)
  int channels = 0;           // NCCL channels (proxy: thread blocks); 0 unknown
  double slowdown = 0;        // overlapped_time / isolated_time - 1 (> -1; slightly negative = noise)
  std::string source;         // optional: nccl | proxy | synthetic ..., informational
};

struct SlowdownDataset {
  std::string path;
  std::vector<SlowdownRow> rows;
};

// The columns in the order write_slowdown_csv writes them; `kernel` and `source` may be absent when reading.
const std::vector<std::string>& slowdown_columns();

// Strict: every row must be valid. InputError "PATH:LINE: column NAME: 'VALUE' <rule>" (or PATH: for whole-file
// problems: too big, no header, missing or unknown column, no rows).
SlowdownDataset parse_slowdown_csv(std::string_view text, const std::string& path);
SlowdownDataset read_slowdown_csv(const std::string& path);

// CSV text with slowdown_columns() as header; numbers written so that parse_slowdown_csv reads them back exactly.
std::string write_slowdown_csv(const std::vector<SlowdownRow>& rows);

// Canonical spellings: "alltoall" -> "all_to_all", "send_recv"/"p2p" -> "sendrecv"; "" when not a collective.
std::string canonical_collective(std::string_view s);

}  // namespace stepsim::overlap
