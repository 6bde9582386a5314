#include <algorithm>
#include <cstdio>
#include <sstream>

#include "stepsim/api/validate.hpp"
#include "stepsim/report/breakdown.hpp"
#include "stepsim/report/summary.hpp"

namespace stepsim::api {

std::string validate_text(const ValidateOutput& out, bool verbose) {
  const validate::ValidationResult& r = out.result;
  std::ostringstream os;
  char buf[512];
  // The run column is as wide as the longest id.
  int id_width = 26;
  for (const auto& x : r.rows) id_width = std::max(id_width, static_cast<int>(std::min<size_t>(x.id.size(), 80)));
  std::snprintf(buf, sizeof buf, "%-*s %12s %12s %8s %6s %-9s\n", id_width, "run", "measured", "predicted", "error",
                "MFU",
                "recompute");
  os << buf;
  for (const auto& x : r.rows) {
    std::snprintf(buf, sizeof buf, "%-*s %10.3f s %10.3f s %+7.1f%% %5.1f%% %-9s%s\n", id_width, x.id.c_str(),
                  x.measured_step_time_s, x.predicted_step_time_s, 100 * x.error, 100 * x.predicted_mfu,
                  x.recompute.c_str(),
                  x.oom ? " (does not fit in memory)" : x.memory_tight ? " (tight in memory)" : "");
    os << buf;
    if (verbose) {
      os << "    measured from " << x.measured_from << "\n";
      for (const auto& s : x.stated) os << "    from the row: " << s << "\n";
      for (const auto& a : x.assumptions) os << "    assumed: " << a << "\n";
      for (const auto& n : x.notes) os << "    note: " << n << "\n";
      std::snprintf(buf, sizeof buf, "    rank 0: compute %.3f s, optimizer %.3f s, bubble %.3f s, exposed comm", 
                    x.breakdown.compute_s, x.breakdown.optimizer_s, x.breakdown.pipeline_bubble_s);
      os << buf;
      for (int k = 0; k < report::kNumCommKinds; ++k) {
        std::snprintf(buf, sizeof buf, " %s %.3f s", report::comm_kind_name(k), x.breakdown.exposed_comm_s[static_cast<size_t>(k)]);
        os << buf;
      }
      std::snprintf(buf, sizeof buf, "\n    memory: peak %s of %s per GPU\n",
                    report::format_bytes(static_cast<double>(x.peak_bytes)).c_str(),
                    report::format_bytes(static_cast<double>(x.capacity_bytes)).c_str());
      os << buf;
    }
  }
  os << "\nby source                        rows     MAPE  mean signed error\n";
  for (const auto& [name, s] : r.by_source) {
    std::snprintf(buf, sizeof buf, "  %-30s %4d  %6.1f%%  %+6.1f%%\n", name.c_str(), s.rows, 100 * s.mape,
                  100 * s.mean_signed_error);
    os << buf;
  }
  std::snprintf(buf, sizeof buf, "  %-30s %4zu  %6.1f%%  %+6.1f%%\n", "all", r.rows.size(), 100 * r.mape,
                100 * r.mean_signed_error);
  os << buf;
  os << "\nby framework and GPU                                rows     MAPE  mean signed error\n";
  for (const auto& [key, s] : r.by_framework_gpu) {
    std::snprintf(buf, sizeof buf, "  %-12s %-37s %4d  %6.1f%%  %+6.1f%%\n", key.first.c_str(), key.second.c_str(),
                  s.rows, 100 * s.mape, 100 * s.mean_signed_error);
    os << buf;
  }
  if (r.memory.rows > 0) {
    os << "\npeak memory per GPU (predicted: PyTorch's max_memory_reserved at the highest stage)\n";
    std::snprintf(buf, sizeof buf, "%-*s %12s %12s %8s  %s\n", id_width, "run", "measured", "predicted", "error",
                  "measured from");
    os << buf;
    for (const auto& x : r.rows) {
      if (!x.measured_memory_bytes) continue;
      std::snprintf(buf, sizeof buf, "%-*s %12s %12s %+7.1f%%  %s\n", id_width, x.id.c_str(),
                    report::format_bytes(*x.measured_memory_bytes).c_str(),
                    report::format_bytes(static_cast<double>(x.predicted_reserved_bytes)).c_str(), 100 * x.memory_error,
                    x.memory_from.c_str());
      os << buf;
    }
    std::snprintf(buf, sizeof buf, "  %d rows: MAPE %.1f%%, mean signed error %+.1f%%, errors 10th..90th percentile "
                  "%+.1f%% .. %+.1f%%, %d within 10%%\n", r.memory.rows, 100 * r.memory.mape,
                  100 * r.memory.mean_signed_error, 100 * r.memory_p10, 100 * r.memory_p90,
                  r.memory_within_10_percent);
    os << buf;
  }
  os << "\nmeasured runs predicted not to fit in memory: " << r.not_fit.size() << " of " << r.rows.size();
  for (size_t i = 0; i < r.not_fit.size(); ++i) os << (i == 0 ? " (" : ", ") << r.not_fit[i];
  os << (r.not_fit.empty() ? "\n" : ")\n");
  if (!r.tight.empty()) {
    os << "measured runs predicted tight in memory (allocations fit, the reserved peak does not): " << r.tight.size();
    for (size_t i = 0; i < r.tight.size(); ++i) os << (i == 0 ? " (" : ", ") << r.tight[i];
    os << ")\n";
  }
  auto band_table = [&](const char* title, const std::vector<validate::KindBand>& bands) {
    os << "\n" << title << "rows  errors 10th..90th percentile  measured inside the 80% interval\n";
    for (const auto& b : bands) {
      std::snprintf(buf, sizeof buf, "  %-30s %4d  %+6.1f%% .. %+6.1f%%              %d of %d\n",
                    (b.arch + " " + b.kind).c_str(), b.rows, 100 * b.p10, 100 * b.p90, b.covered, b.with_interval);
      os << buf;
    }
  };
  band_table("by arch and kind, Megatron-Core  ", r.bands);
  if (!r.framework_bands.empty()) band_table("by architecture and framework    ", r.framework_bands);
  const validate::SourceWeightedBand& a = r.all_sources;
  const std::string who = std::to_string(a.sources) + (a.sources == 1 ? " source" : " sources, weighted equally");
  std::snprintf(buf, sizeof buf, "  %-30s %4d  %+6.1f%% .. %+6.1f%%              %d of %d\n", who.c_str(), a.rows,
                100 * a.p10, 100 * a.p90, a.covered, a.with_interval);
  os << "\nall runs                         rows  errors 10th..90th percentile  measured inside the 80% interval\n"
     << buf;
  if (!r.failed.empty()) {
    os << "\n" << r.failed.size() << " row(s) could not be simulated:\n";
    for (const auto& f : r.failed) os << "  " << f.id << " (line " << f.line << "): " << f.message << "\n";
  }
  return os.str();
}

}  // namespace stepsim::api
