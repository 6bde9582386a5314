#include "stepsim/report/memory_report.hpp"

#include <cstdio>
#include <sstream>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/report/summary.hpp"

namespace stepsim::report {

nlohmann::json memory_json(const workload::Workload& w, const hw::GpuSpec& gpu) {
  const int64_t cap = static_cast<int64_t>(gpu.memory_bytes);
  nlohmann::json stages = nlohmann::json::array();
  int64_t worst = 0;
  for (int st = 0; st < w.layout.pipeline(); ++st) {
    const workload::Program& p = w.programs[w.role_of_stage[st]];
    const int64_t peak = p.static_memory.total() + p.activation_peak;
    worst = std::max(worst, peak);
    stages.push_back({{"stage", st},
                      {"parameters", p.dense_parameters + p.expert_parameters},
                      {"weight_bytes", p.static_memory.weights},
                      {"gradient_bytes", p.static_memory.gradients},
                      {"optimizer_bytes", p.static_memory.optimizer},
                      {"overhead_bytes", p.static_memory.overhead},
                      {"fp8_weight_cache_bytes", p.static_memory.fp8_weight_cache},
                      {"static_bytes", p.static_memory.total()},
                      {"allocator_reserve_bytes", p.static_memory.allocator_reserve},
                      {"activation_bytes", p.activation_peak},
                      {"stored_activation_bytes", p.stored_activation_peak},
                      {"working_buffer_bytes", p.activation_peak - p.stored_activation_peak},
                      {"peak_bytes", peak},
                      {"oom", peak > cap}});
  }
  return {{"gpu", gpu.name}, {"capacity_bytes", cap}, {"peak_bytes_max", worst}, {"oom", worst > cap},
          {"per_stage", stages}};
}

std::string memory_text(const workload::Workload& w, const hw::GpuSpec& gpu) {
  const nlohmann::json j = memory_json(w, gpu);
  std::ostringstream o;
  char line[256];
  const auto& par = w.job.parallelism;
  o << "stepsim memory: " << w.job.model.name << " on " << w.job.cluster.num_gpus << " x " << j["gpu"].get<std::string>()
    << " (TP " << par.tensor << ", PP " << par.pipeline << ", DP " << par.data << ", CP " << par.context << ", EP "
    << par.expert << "), per rank, capacity " << format_bytes(j["capacity_bytes"].get<double>()) << "\n";
  bool fp8 = false;
  for (const auto& s : j["per_stage"]) fp8 = fp8 || s["fp8_weight_cache_bytes"].get<int64_t>() > 0;
  o << "  stage      weights" << (fp8 ? "   fp8 copies" : "")
    << "    gradients    optimizer     overhead  activations      working    allocator         peak\n";
  for (const auto& s : j["per_stage"]) {
    char copies[32] = "";
    if (fp8) std::snprintf(copies, sizeof copies, " %12s", format_bytes(s["fp8_weight_cache_bytes"].get<double>()).c_str());
    std::snprintf(line, sizeof line, "  %5d %12s%s %12s %12s %12s %12s %12s %12s %12s%s\n", s["stage"].get<int>(),
                  format_bytes(s["weight_bytes"].get<double>()).c_str(), copies,
                  format_bytes(s["gradient_bytes"].get<double>()).c_str(),
                  format_bytes(s["optimizer_bytes"].get<double>()).c_str(),
                  format_bytes(s["overhead_bytes"].get<double>()).c_str(),
                  format_bytes(s["stored_activation_bytes"].get<double>()).c_str(),
                  format_bytes(s["working_buffer_bytes"].get<double>()).c_str(),
                  format_bytes(s["allocator_reserve_bytes"].get<double>()).c_str(),
                  format_bytes(s["peak_bytes"].get<double>()).c_str(), s["oom"].get<bool>() ? "  OOM" : "");
    o << line;
  }
  o << (j["oom"].get<bool>() ? "  does NOT fit: " : "  fits: ") << "largest peak "
    << format_bytes(j["peak_bytes_max"].get<double>()) << "\n";
  return o.str();
}

}  // namespace stepsim::report
