#pragma once
// Reader of nccl-tests results: the text the *_perf binaries print (alone, or inside an NCCL_DEBUG=INFO log) and
// the CSV of shared/data/nccl-tests. Lines that look like result rows but do not parse (truncated, interleaved with
// log text) are skipped and counted; every row is checked against algbw = size / time and busbw = algbw x factor
// within the printed rounding. docs/CALIBRATION.md describes both formats.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::cost {

// The nccl-tests benchmarks (binary name without "_perf").
enum class BenchCollective { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, SendRecv, Gather, Scatter };
const char* name_of(BenchCollective c);  // "all_reduce", ..., "alltoall", "sendrecv", "gather", "scatter"
// Accepts binary and kernel spellings: all_reduce, all_reduce_perf, AllReduce, ncclAllReduce, all-to-all, ...;
// "send"/"recv" are sendrecv. nullopt otherwise.
std::optional<BenchCollective> parse_bench_collective(std::string_view s);
// busbw / algbw for n ranks (nccl-tests doc/PERFORMANCE.md; gather/scatter (n-1)/n, sendrecv 1).
double bench_bus_factor(BenchCollective c, int n);

constexpr size_t kMaxMeasurementFileBytes = 64u << 20;

// Reads a measurement file: InputError naming it when unreadable, over kMaxMeasurementFileBytes, or binary
// (a NUL byte, or more than 1% control characters).
std::string read_measurement_file(const std::string& path);
// The binary check alone, for text already in memory.
void check_measurement_text(std::string_view text, const std::string& path);

struct NcclTestsRow {
  int line = 0;  // 1-based line in the file
  uint64_t bytes = 0;
  uint64_t count = 0;  // elements (0 when the CSV has no count column)
  std::string type, redop;
  int root = -1;
  double time_us = 0;  // out-of-place: what calibration uses
  double algbw_GBps = 0, busbw_GBps = 0;
  std::string wrong;  // "#wrong" (or the old "error") column as printed; "" when absent
  std::optional<double> inplace_time_us, inplace_algbw_GBps, inplace_busbw_GBps;
  bool has_bandwidths = true;  // false: a CSV without algbw/busbw columns (nothing to cross-check)
  // Half a unit of the last printed digit of time, algbw and busbw: the rounding the cross-check allows.
  double time_tol = 0, algbw_tol = 0, busbw_tol = 0;
};

// One benchmark run: its rows and what the text says about where it ran.
struct NcclTestsTable {
  int line = 0;                                // first line of the run (header, device list or first row)
  std::optional<BenchCollective> collective;   // from the binary name in the text; nullopt when it never says
  int ranks = 0;                               // ranks in the device list (CSV: num_gpus); 0 = not printed
  int nodes = 0;                               // distinct hosts in the device list (CSV: num_nodes); 0 = unknown
  std::string gpu;                             // device name as printed ("NVIDIA A100-PCIE-40GB"); "" unknown
  std::string interconnect;                    // CSV only: the intra-node interconnect column, free text
  std::vector<NcclTestsRow> rows;
  std::optional<double> avg_busbw_GBps;        // "# Avg bus bandwidth : X"
};

struct NcclTestsIssue {
  int line = 0;
  std::string what;
};

struct NcclTestsFile {
  std::string path;
  std::string nccl_version;            // "2.16.5" (build suffix dropped); "" when the text does not say
  std::vector<NcclTestsTable> tables;  // runs with at least one row, in file order
  int garbled_lines = 0;               // lines that started like a result row but did not parse
  std::vector<int> garbled_line_numbers;   // the first 20 of them
  std::vector<NcclTestsIssue> mismatches;  // rows failing the algbw/busbw cross-check or with #wrong > 0

  size_t row_count() const;
};

// Parses nccl-tests text or CSV (a first line starting with "collective," selects CSV). InputError naming `path`
// for binary data or a text without any result row.
NcclTestsFile parse_nccl_tests(std::string_view text, const std::string& path);
NcclTestsFile read_nccl_tests(const std::string& path);

// What a real collective can measure: a message of at most 2^48 bytes (256 TiB), taking 0.01 us to 10^9 us, at an
// algorithm bandwidth (bytes / time) of at most 10^5 GB/s (fifty times NVLink 5's per-GPU rate). A row outside
// is no measurement: InputError "<path>:<line>: ..." naming the value and the range (a calibration fitted to it
// would store infinite errors).
void check_collective_measurement(const std::string& path, int line, uint64_t bytes, double time_us);
// The same rule for callers that name the place themselves (a JSON record): "" when the measurement is possible,
// else what is wrong ("time 1e-09 us is outside 0.01 .. 1e9 us").
std::string collective_measurement_violation(uint64_t bytes, double time_us);
// A CSV cell that is a number a measurement cannot have (negative, zero where a count is meant, NaN, infinity):
// throws InputError "<path>:<line>: column <name>: <rule>" rather than letting the row pass as a garbled line.
// Cells that are not numbers at all stay garbled rows (a cut line, a stray word).
void refuse_impossible_number(const std::string& path, int line, const std::string& column, const std::string& cell,
                              int min);

}  // namespace stepsim::cost
