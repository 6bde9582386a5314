// GPU catalog loader: data/gpus.yaml -> GpuSpec list, parsed strictly (unknown/missing keys and bad values are
// InputErrors naming the file and the key).
#include "stepsim/catalog/gpu_catalog.hpp"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/catalog/gpu_name.hpp"
#include "stepsim/io/data_file.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::hw {
namespace {

// Names match ignoring case, surrounding blanks, and the choice of ' ', '_' or '-' as separator, so that
// "h100_sxm", "H100 SXM" and "H100-SXM" are the same GPU.
std::string normalize(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  std::string out;
  out.reserve(e - b);
  for (size_t i = b; i < e; ++i) {
    char c = s[i];
    if (c == ' ' || c == '_') c = '-';
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::optional<GpuArch> arch_named(const std::string& name) {
  for (GpuArch a : kGpuArchs)
    if (name == name_of(a)) return a;
  return std::nullopt;
}

}  // namespace

const char* name_of(GpuArch a) {
  switch (a) {
    case GpuArch::Volta: return "volta";
    case GpuArch::Ampere: return "ampere";
    case GpuArch::Ada: return "ada";
    case GpuArch::Hopper: return "hopper";
    case GpuArch::Blackwell: return "blackwell";
  }
  return "?";
}

double GpuSpec::peak_flops(spec::Precision p) const {
  switch (p) {
    case spec::Precision::Fp32:
      // Megatron-LM enables TF32 for fp32 matmuls; GPUs without TF32 (Volta) run them on CUDA cores.
      return tf32_flops > 0 ? tf32_flops : fp32_flops;
    case spec::Precision::Fp16:
      return fp16_flops > 0 ? fp16_flops : fp32_flops;
    case spec::Precision::Bf16:
      // Volta has no BF16 tensor cores; PyTorch falls back to CUDA-core math.
      return bf16_flops > 0 ? bf16_flops : fp32_flops;
    case spec::Precision::Fp8:
      // Without FP8 tensor cores Transformer Engine cannot run FP8 GEMMs; the nearest real rate is BF16's.
      return fp8_flops > 0 ? fp8_flops : peak_flops(spec::Precision::Bf16);
    case spec::Precision::Nvfp4:
      // validate refuses nvfp4 on a GPU without FP4 tensor cores; the nearest real rate is FP8's.
      return fp4_flops > 0 ? fp4_flops : peak_flops(spec::Precision::Fp8);
  }
  return fp32_flops;
}

GpuCatalog GpuCatalog::load(const std::string& path) {
  const spec::DataFile f(path, "GPU catalog file");
  const YAML::Node& root = f.root();
  f.keys(root, "(top level)", {"gpus"});
  const YAML::Node list = root["gpus"];
  if (!list.IsSequence() || list.size() == 0) f.fail_at(list, "gpus", "must be a non-empty list of GPUs");
  static const std::vector<std::string> required{"name",        "arch",        "sm_count",    "fp32_tflops",
                                                 "tf32_tflops", "fp16_tflops", "bf16_tflops", "fp8_tflops",
                                                 "hbm_bandwidth_GBps",         "memory_GiB",  "nvswitch",
                                                 "intra_node_GBps",            "source"};
  static const std::vector<std::string> optional{"aliases", "nvlink_domain_gpus", "tdp_W", "fp4_tflops"};

  GpuCatalog cat;
  std::map<std::string, std::string> names;  // normalized name or alias -> canonical name (collision check)
  try {
    for (size_t i = 0; i < list.size(); ++i) {
      std::string key = "gpus[" + std::to_string(i) + "]";
      const YAML::Node e = list[i];
      if (!e.IsMap()) f.fail_at(e, key, "must be a mapping of GPU fields");
      // Label messages with the GPU's name as early as it can be read, e.g. "gpus[3] (H100-SXM).nvlink".
      if (const YAML::Node nm = e["name"]; nm.IsDefined() && nm.IsScalar() && !nm.Scalar().empty())
        key += " (" + nm.Scalar() + ")";
      f.keys(e, key, required, optional);
      auto field = [&](const char* k) { return key + "." + k; };
      // Datasheet figures: >= 0 where 0 means "not supported" (tf32, bf16, fp8), else > 0.
      auto figure = [&](const char* k, bool zero_allowed) {
        const double v = f.number(e[k], field(k));
        if (v < 0 || (!zero_allowed && v == 0))
          f.fail_at(e[k], field(k),
                    std::string(zero_allowed ? "must be >= 0 (0 = unsupported)" : "must be > 0") + ", got " +
                        e[k].Scalar());
        return v;
      };
      auto count = [&](const char* k) {
        const int64_t v = f.integer(e[k], field(k));
        if (v <= 0 || v > 1000000) f.fail_at(e[k], field(k), "must be a positive integer, got " + e[k].Scalar());
        return static_cast<int>(v);
      };

      GpuSpec g;
      g.name = f.text(e["name"], field("name"));
      const std::string arch = f.text(e["arch"], field("arch"));
      const std::optional<GpuArch> a = arch_named(arch);
      if (!a)
        f.fail(field("arch"), "unknown architecture '" + arch + "'; allowed: volta, ampere, ada, hopper, blackwell");
      g.arch = *a;
      g.sm_count = count("sm_count");
      constexpr double kTera = 1e12;
      g.fp32_flops = figure("fp32_tflops", false) * kTera;
      g.tf32_flops = figure("tf32_tflops", true) * kTera;
      g.fp16_flops = figure("fp16_tflops", false) * kTera;
      g.bf16_flops = figure("bf16_tflops", true) * kTera;
      g.fp8_flops = figure("fp8_tflops", true) * kTera;
      if (e["fp4_tflops"].IsDefined()) g.fp4_flops = figure("fp4_tflops", true) * kTera;
      g.hbm_bandwidth_Bps = figure("hbm_bandwidth_GBps", false) * 1e9;
      g.memory_bytes = static_cast<uint64_t>(std::llround(figure("memory_GiB", false) * 1073741824.0));
      g.nvswitch = f.boolean(e["nvswitch"], field("nvswitch"));
      g.intra_node_GBps = figure("intra_node_GBps", false);
      if (e["nvlink_domain_gpus"].IsDefined()) g.nvlink_domain_gpus = count("nvlink_domain_gpus");
      if (e["tdp_W"].IsDefined()) g.tdp_W = figure("tdp_W", false);
      g.source = f.text(e["source"], field("source"));

      std::vector<std::string> labels{g.name};
      if (const YAML::Node al = e["aliases"]; al.IsDefined() && !al.IsNull()) {
        if (!al.IsSequence()) f.fail_at(al, field("aliases"), "must be a list of names");
        for (size_t k = 0; k < al.size(); ++k) {
          const std::string alias = f.text(al[k], field("aliases") + "[" + std::to_string(k) + "]");
          labels.push_back(alias);
          g.aliases.push_back(normalize(alias));
        }
      }
      for (const auto& l : labels) {
        auto [it, inserted] = names.emplace(normalize(l), g.name);
        if (!inserted) f.fail(key, "name or alias '" + l + "' is already used by GPU '" + it->second + "'");
      }
      cat.normalized_names_.push_back(normalize(g.name));
      cat.name_keys_.push_back(name_keys_of(g));
      cat.gpus_.push_back(std::move(g));
    }
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": " + e.what());  // what the checks above did not name (odd key types, ...)
  }
  return cat;
}

const GpuSpec* GpuCatalog::try_find(const std::string& name) const {
  const std::string key = normalize(name);
  for (size_t i = 0; i < gpus_.size(); ++i) {
    if (normalized_names_[i] == key) return &gpus_[i];
  }
  for (const auto& g : gpus_) {
    for (const auto& a : g.aliases) {
      if (a == key) return &g;
    }
  }
  return nullptr;
}

const GpuSpec& GpuCatalog::find(const std::string& name) const {
  if (const GpuSpec* g = try_find(name)) return *g;
  std::string known;
  for (const auto& g : gpus_) known += (known.empty() ? "" : ", ") + g.name;
  throw InputError("key cluster.gpu: unknown GPU '" + name + "'; known: " + known);
}

std::string data_dir() {
  if (const char* env = std::getenv("STEPSIM_DATA_DIR"); env != nullptr && *env != '\0') return env;
#ifdef STEPSIM_SOURCE_DATA_DIR
  return STEPSIM_SOURCE_DATA_DIR;
#else
  return "data";
#endif
}

GpuSpec effective_gpu(const GpuCatalog& catalog, const spec::ClusterSpec& cluster) {
  GpuSpec g = catalog.find(cluster.gpu);
  const spec::GpuOverride& o = cluster.gpu_override;
  if (o.memory_GiB > 0) g.memory_bytes = static_cast<uint64_t>(o.memory_GiB * 1024.0 * 1024.0 * 1024.0);
  if (o.memory_bandwidth_TBps > 0) g.hbm_bandwidth_Bps = o.memory_bandwidth_TBps * 1e12;
  if (o.sm_count > 0 && g.sm_count > 0) {
    // The per-SM rates are the die's; fewer or more SMs scale every rate (an H100 PCIe has 114 of the SXM's 132).
    const double f = static_cast<double>(o.sm_count) / g.sm_count;
    for (double* rate : {&g.fp32_flops, &g.tf32_flops, &g.fp16_flops, &g.bf16_flops, &g.fp8_flops}) *rate *= f;
    g.sm_count = o.sm_count;
  }
  if (o.nvlink_GBps > 0) g.intra_node_GBps = o.nvlink_GBps;
  return g;
}

}  // namespace stepsim::hw
