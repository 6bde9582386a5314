#pragma once
// Aligned NCCL kernel records: one measured collective call per CSV row, as a profiler writes them after matching
// NCCL's COLL log lines to GPU kernels. Columns (docs/CALIBRATION.md): collective, bytes, ranks, nodes,
// ranks_per_node, duration_us, and optionally algorithm, protocol. Bad rows are skipped and counted.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/cost/collective/collective_algorithm.hpp"
#include "stepsim/calibrate/nccl_fit.hpp"
#include "stepsim/calibrate/nccl_tests_reader.hpp"

namespace stepsim::cost {

struct KernelRecord {
  int line = 0;
  BenchCollective collective = BenchCollective::AllReduce;
  uint64_t bytes = 0;  // nccl-tests' size S of the call
  int ranks = 1, nodes = 1, ranks_per_node = 1;
  double duration_us = 0;
  Algorithm algorithm = Algorithm::Auto;  // empty, "auto" or "direct": not recorded
  std::optional<Protocol> protocol;
};

struct KernelRecords {
  std::string path;
  std::vector<KernelRecord> records;
  int bad_lines = 0;
  std::vector<int> bad_line_numbers;  // the first 20
};

// InputError naming the file for binary data, a header without the required columns, or no valid row.
KernelRecords parse_kernel_records(std::string_view text, const std::string& path);
KernelRecords read_kernel_records(const std::string& path);

// A record as a measured point of the NCCL fit (its algorithm and protocol as recorded); `where` names it in messages.
CommPoint comm_point(const KernelRecord& r, const std::string& where);

}  // namespace stepsim::cost
