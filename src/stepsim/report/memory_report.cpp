#include "stepsim/report/memory_report.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/report/memory_fit.hpp"
#include "stepsim/report/summary.hpp"

namespace stepsim::report {

nlohmann::json memory_json(const workload::Workload& w, const hw::GpuSpec& gpu) {
  const int64_t cap = static_cast<int64_t>(gpu.memory_bytes);
  nlohmann::json stages = nlohmann::json::array();
  int64_t worst = 0;
  int worst_stage = 0;
  MemoryFit verdict = MemoryFit::Fits;
  for (int st = 0; st < w.layout.pipeline(); ++st) {
    const workload::Program& p = w.programs[w.role_of_stage[st]];
    const workload::StaticMemory& sm = p.static_memory;
    const int64_t allocated = sm.allocated() + p.activation_peak;
    const int64_t peak = sm.total() + p.activation_peak;
    if (peak > worst) worst = peak, worst_stage = st;
    const MemoryFit fit = memory_fit(allocated, sm.overhead, peak, cap);
    verdict = std::max(verdict, fit);
    stages.push_back({{"stage", st},
                      {"parameters", p.dense_parameters + p.expert_parameters},
                      {"weight_bytes", sm.weights},
                      {"gradient_bytes", sm.gradients},
                      {"optimizer_bytes", sm.optimizer},
                      {"overhead_bytes", sm.overhead},
                      {"fp8_weight_cache_bytes", sm.fp8_weight_cache},
                      {"gathered_param_bytes", sm.gathered},
                      {"static_bytes", sm.total()},
                      {"allocator_reserve_bytes", sm.allocator_reserve},
                      {"stream_pool_bytes", sm.stream_pools},
                      {"activation_bytes", p.activation_peak},
                      {"stored_activation_bytes", p.stored_activation_peak},
                      {"working_buffer_bytes", p.activation_peak - p.stored_activation_peak},
                      {"peak_allocated_bytes", allocated},
                      {"peak_reserved_bytes", allocated + sm.reserved_extra()},
                      {"peak_bytes", peak},
                      {"oom", fit == MemoryFit::Over},
                      {"tight", fit == MemoryFit::Tight}});
  }
  return {{"gpu", gpu.name}, {"capacity_bytes", cap}, {"peak_bytes_max", worst}, {"peak_stage", worst_stage},
          {"oom", verdict == MemoryFit::Over}, {"tight", verdict == MemoryFit::Tight}, {"per_stage", stages}};
}

std::string memory_text(const workload::Workload& w, const hw::GpuSpec& gpu) {
  const nlohmann::json j = memory_json(w, gpu);
  std::ostringstream o;
  const auto& par = w.job.parallelism;
  o << "stepsim memory: " << w.job.model.name << " on " << w.job.cluster.num_gpus << " x " << j["gpu"].get<std::string>()
    << " (TP " << par.tensor << ", PP " << par.pipeline << ", DP " << par.data << ", CP " << par.context << ", EP "
    << par.expert << "), per rank, capacity " << format_bytes(j["capacity_bytes"].get<double>()) << "\n";
  // Columns in the order they add up; fp8 copies and gathered parameters only where some stage has them.
  struct Column {
    const char* title;
    const char* key;
    bool shown;
  };
  auto any = [&](const char* key) {
    for (const auto& s : j["per_stage"]) {
      if (s[key].get<int64_t>() > 0) return true;
    }
    return false;
  };
  const Column cols[] = {{"weights", "weight_bytes", true},
                         {"fp8 copies", "fp8_weight_cache_bytes", any("fp8_weight_cache_bytes")},
                         {"gathered", "gathered_param_bytes", any("gathered_param_bytes")},
                         {"gradients", "gradient_bytes", true},
                         {"optimizer", "optimizer_bytes", true},
                         {"overhead", "overhead_bytes", true},
                         {"activations", "stored_activation_bytes", true},
                         {"working", "working_buffer_bytes", true},
                         {"allocator", "allocator_reserve_bytes", true},
                         {"stream pools", "stream_pool_bytes", any("stream_pool_bytes")},
                         {"peak", "peak_bytes", true}};
  char cell[48];
  o << "  stage";
  for (const Column& c : cols) {
    if (!c.shown) continue;
    std::snprintf(cell, sizeof cell, " %12s", c.title);
    o << cell;
  }
  o << "\n";
  for (const auto& s : j["per_stage"]) {
    std::snprintf(cell, sizeof cell, "  %5d", s["stage"].get<int>());
    o << cell;
    for (const Column& c : cols) {
      if (!c.shown) continue;
      std::snprintf(cell, sizeof cell, " %12s", format_bytes(s[c.key].get<double>()).c_str());
      o << cell;
    }
    o << memory_fit_mark(s["oom"].get<bool>() ? MemoryFit::Over : s["tight"].get<bool>() ? MemoryFit::Tight
                                                                                        : MemoryFit::Fits)
      << "\n";
  }
  const auto& worst = j["per_stage"][j["peak_stage"].get<size_t>()];
  const char* verdict = j["oom"].get<bool>() ? "  does NOT fit: " : j["tight"].get<bool>() ? "  tight: " : "  fits: ";
  o << verdict << "largest peak "
    << format_bytes(j["peak_bytes_max"].get<double>()) << " (stage " << j["peak_stage"].get<int>()
    << "); PyTorch's counters there: allocated " << format_bytes(worst["peak_allocated_bytes"].get<double>())
    << ", reserved " << format_bytes(worst["peak_reserved_bytes"].get<double>()) << " (the overhead is outside them)\n";
  if (j["tight"].get<bool>()) o << tight_memory_note << "\n";
  return o.str();
}

}  // namespace stepsim::report
