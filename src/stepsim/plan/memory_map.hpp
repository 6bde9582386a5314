#pragma once
// Memory-feasibility map over (TP, PP) for a GPU count (Echo Fig. 13): for each pair, the job's other choices
// (CP, EP, micro-batch, recompute, optimizer) with DP = GPUs / (TP x CP x PP), the largest per-stage peak of
// the analytic memory model (`stepsim memory`'s numbers exactly), whether it fits and by how much.
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/job/job_spec.hpp"
#include "stepsim/report/memory_fit.hpp"

namespace stepsim::plan {

struct MapCell {
  int tensor = 1, pipeline = 1, data = 0;
  bool valid = false;     // false: the pair breaks a rule (reason says which)
  std::string reason;
  int64_t peak_bytes = 0; // largest per-rank peak over stages
  int peak_stage = 0;
  int64_t headroom_bytes = 0;  // capacity - peak (negative: over capacity by that much)
  // Fits, tight (over capacity, but its allocations fit: `stepsim memory` calls it tight) or out of memory, from the
  // worst stage's allocations and the peak (report/memory_fit.hpp).
  report::MemoryFit fit = report::MemoryFit::Over;
  bool fits() const { return valid && fit == report::MemoryFit::Fits; }
  bool tight() const { return valid && fit == report::MemoryFit::Tight; }
  // fits, tight, oom or invalid (the CSV's and the JSON's status).
  const char* status() const { return fits() ? "fits" : tight() ? "tight" : valid ? "oom" : "invalid"; }
};

struct MemoryMap {
  std::vector<int> tensors, pipelines;  // rows, columns
  std::vector<MapCell> cells;           // row-major
  int64_t capacity_bytes = 0;
  std::string settings;                 // the fixed choices, for the header
  const MapCell& at(size_t row, size_t col) const { return cells[row * pipelines.size() + col]; }
};

// TP over the divisors of gpus up to a node, PP over the divisors of gpus up to the layer count.
MemoryMap memory_map(const hw::GpuCatalog& catalog_gpus, const spec::JobSpec& base, int gpus, int64_t global_batch);

std::string memory_map_text(const MemoryMap& m);
// tensor,pipeline,data,status,peak_memory_bytes,capacity_bytes,headroom_bytes,reason
std::string memory_map_csv(const MemoryMap& m);

}  // namespace stepsim::plan
