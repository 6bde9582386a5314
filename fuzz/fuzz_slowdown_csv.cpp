// libFuzzer target for the overlap-slowdown dataset reader (docs/SLOWDOWN-MODEL.md) and the feature encoding behind
// it. InputError is the expected outcome for bad input; any other exception, a crash, a hang, or a row that breaks
// the reader's rules below is a bug. Accepted rows must also survive write_slowdown_csv and read back the same.
#include <cmath>
#include <cstdint>
#include <string>

#include "stepsim/cost/overlap/learned/slowdown_dataset.hpp"
#include "stepsim/cost/overlap/learned/slowdown_features.hpp"
#include "stepsim/io/input_error.hpp"

#include "fuzz_support.hpp"

namespace {

using fuzz_support::require;
using namespace stepsim;

bool pct_ok(double x) { return std::isnan(x) || (x >= 0 && x <= 100); }

void check_row(const overlap::SlowdownRow& r, int lines) {
  require(r.line >= 1 && r.line <= lines);
  require(!r.gpu.empty() && r.gpu.size() <= 64 && !r.kernel_type.empty());
  require(std::isfinite(r.isolated_us) && r.isolated_us > 0);
  for (double m : {r.sm_throughput_pct, r.memory_throughput_pct, r.dram_throughput_pct, r.achieved_occupancy_pct,
                   r.l1_hit_rate_pct, r.l2_hit_rate_pct}) {
    require(pct_ok(m));
  }
  require(!std::isnan(overlap::collective_code(r.collective)));
  require(r.bucket_bytes >= 1 && r.channels >= 0 && r.channels <= 1024);
  require(std::isfinite(r.slowdown) && r.slowdown > -1 && r.slowdown <= 1000);
  const overlap::FeatureVector f = overlap::features_of(r, 0);
  for (float x : f) require(!std::isinf(x));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  int lines = 1;
  for (char c : text) lines += c == '\n';
  overlap::SlowdownDataset ds;
  try {
    ds = overlap::parse_slowdown_csv(text, "fuzz.csv");
  } catch (const InputError&) {
    return 0;
  }
  require(!ds.rows.empty());
  for (const auto& r : ds.rows) check_row(r, lines);
  const overlap::SlowdownDataset back = overlap::parse_slowdown_csv(overlap::write_slowdown_csv(ds.rows), "back.csv");
  require(back.rows.size() == ds.rows.size());
  for (size_t i = 0; i < ds.rows.size(); ++i) {
    const auto &a = ds.rows[i], &b = back.rows[i];
    require(a.gpu == b.gpu && a.kernel == b.kernel && a.kernel_type == b.kernel_type && a.collective == b.collective);
    require(a.isolated_us == b.isolated_us && a.slowdown == b.slowdown && a.bucket_bytes == b.bucket_bytes);
    require(a.channels == b.channels && a.algorithm == b.algorithm && a.protocol == b.protocol);
  }
  return 0;
}
