#pragma once
// Writing TracedRank ops as a `stepsim-trace-program` file with explicit `after` dependencies (docs/TRACES.md): the
// form in which `stepsim trace extrapolate` and the Chakra import (`stepsim trace import` of .et files) hand a
// program to `stepsim simulate --workload`, which reads it back with read_traced_rank (workload_dir.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/ingest/trace/traced_rank.hpp"

namespace stepsim::trace {

// One op: kind, name, its timing or communication fields, and `after`. Keys whose value is the reader's default
// (zero flops, no memory) are left out.
nlohmann::json traced_op_json(const TracedOp& o);
// The whole program of a rank; `source` names what it came from, `extra` keys are merged into the top level.
nlohmann::json traced_program_json(const TracedRank& r, const std::string& source,
                                   const nlohmann::json& extra = nlohmann::json::object());
// Writes text to a file of the output folder; InputError naming the path (and `option`) when it cannot.
void write_output_text(const std::string& path, const std::string& text, const std::string& option = "--out");

// The largest rank file `simulate --workload` reads (workload_dir.cpp says why). Every writer of rank files (trace
// import of Kineto or Chakra traces, trace extrapolate) refuses a larger one rather than write what the reader refuses.
// 96 MiB: the parse holds about 900 bytes per op, and the smallest op a file can hold is 44 bytes
// ({"kind":"compute","name":"","duration_ns":1}): 96 MiB of them, 2.24 M ops, peaked at 2.01 GB, under 2 GiB (112 MiB
// of 46-byte ops reached 2.15 GB, 128 MiB 2.2 GB).
constexpr uintmax_t kMaxRankFileBytes = uintmax_t{96} << 20;
// The rank files of one folder together: the reader keeps every rank's ops while it parses the next (two files at the
// per-file limit peaked at 3.1 GB), so the per-file limit alone does not bound its memory. The writers keep to it too.
constexpr uintmax_t kMaxWorkloadBytes = kMaxRankFileBytes;
// InputError naming `path` and the limit when `bytes` is above `limit`.
void check_rank_file_size(const std::string& path, uintmax_t bytes, uintmax_t limit = kMaxRankFileBytes);
// InputError naming the folder `dir` when its rank files hold `bytes` together, above kMaxWorkloadBytes.
void check_workload_size(const std::string& dir, uintmax_t bytes);

// What the rank files written to one folder hold so far: a writer adds each file and stops (InputError) once the
// folder would exceed what `simulate --workload` reads. It is the writer's transaction too: the files written through
// it are removed when it goes out of scope before commit(), so a refused write leaves no part of a workload that
// `simulate --workload` would replay as if whole.
class RankFileBudget {
 public:
  explicit RankFileBudget(std::string dir) : dir_(std::move(dir)) {}
  RankFileBudget(const RankFileBudget&) = delete;
  RankFileBudget& operator=(const RankFileBudget&) = delete;
  ~RankFileBudget();
  void add(uintmax_t bytes);
  void wrote(std::string path) { written_.push_back(std::move(path)); }
  void commit() { written_.clear(); }

 private:
  std::string dir_;
  uintmax_t used_ = 0;
  std::vector<std::string> written_;
};

// write_output_text for a rank file: above the limits (the file's, and the folder's when `budget` is given) nothing
// is written and the command stops.
void write_rank_file(const std::string& path, const std::string& text, RankFileBudget* budget = nullptr);

}  // namespace stepsim::trace
