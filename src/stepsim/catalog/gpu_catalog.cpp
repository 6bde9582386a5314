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

std::string line_of(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return "";
  return " (line " + std::to_string(m.line + 1) + ")";
}

[[noreturn]] void fail(const std::string& file, const std::string& key, const std::string& rule) {
  throw InputError(file + ": " + key + ": " + rule);
}

std::optional<GpuArch> arch_named(const std::string& name) {
  for (GpuArch a : kGpuArchs)
    if (name == name_of(a)) return a;
  return std::nullopt;
}

// Reads one `gpus[i]` entry; `key` is the prefix used in messages, e.g. "gpus[3]".
class EntryReader {
 public:
  EntryReader(const std::string& file, const YAML::Node& node, std::string key)
      : file_(file), node_(node), key_(std::move(key)) {}

  void check_keys(const std::set<std::string>& required, const std::set<std::string>& optional) {
    std::set<std::string> seen;
    for (const auto& kv : node_) {
      const std::string k = kv.first.as<std::string>();
      if (!seen.insert(k).second) fail(file_, key_ + "." + k, "duplicate key" + line_of(kv.first));
      if (!required.count(k) && !optional.count(k)) {
        std::string allowed;
        for (const auto& r : required) allowed += (allowed.empty() ? "" : ", ") + r;
        for (const auto& o : optional) allowed += ", " + o;
        fail(file_, key_ + "." + k, "unknown key" + line_of(kv.first) + "; allowed: " + allowed);
      }
    }
    for (const auto& r : required)
      if (!seen.count(r)) fail(file_, key_ + "." + r, "missing required key" + line_of(node_));
  }

  // Once the name is known, messages say "gpus[3] (H100-SXM)".
  void set_label(const std::string& name) { key_ += " (" + name + ")"; }

  std::string str(const std::string& k) {
    const YAML::Node n = node_[k];
    if (!n.IsScalar()) fail(file_, key_ + "." + k, "must be a string" + line_of(n));
    std::string v = n.as<std::string>();
    if (v.empty()) fail(file_, key_ + "." + k, "must not be empty" + line_of(n));
    return v;
  }

  double number(const std::string& k, bool zero_allowed) {
    const YAML::Node n = node_[k];
    double v = 0;
    try {
      if (!n.IsScalar()) throw YAML::BadConversion(n.Mark());
      v = n.as<double>();
    } catch (const YAML::BadConversion&) {
      fail(file_, key_ + "." + k, "must be a number" + line_of(n));
    }
    if (!std::isfinite(v) || v < 0 || (!zero_allowed && v == 0))
      fail(file_, key_ + "." + k,
           std::string(zero_allowed ? "must be >= 0 (0 = unsupported)" : "must be > 0") + ", got " +
               n.Scalar() + line_of(n));
    return v;
  }

  int positive_int(const std::string& k) {
    const YAML::Node n = node_[k];
    long long v = 0;
    try {
      if (!n.IsScalar()) throw YAML::BadConversion(n.Mark());
      v = n.as<long long>();
    } catch (const YAML::BadConversion&) {
      fail(file_, key_ + "." + k, "must be an integer" + line_of(n));
    }
    if (v <= 0 || v > 1000000) fail(file_, key_ + "." + k, "must be a positive integer, got " + n.Scalar() + line_of(n));
    return static_cast<int>(v);
  }

  bool boolean(const std::string& k) {
    const YAML::Node n = node_[k];
    try {
      if (!n.IsScalar()) throw YAML::BadConversion(n.Mark());
      return n.as<bool>();
    } catch (const YAML::BadConversion&) {
      fail(file_, key_ + "." + k, "must be true or false" + line_of(n));
    }
  }

  std::vector<std::string> string_list(const std::string& k) {
    const YAML::Node n = node_[k];
    if (!n || n.IsNull()) return {};
    if (!n.IsSequence()) fail(file_, key_ + "." + k, "must be a list of names" + line_of(n));
    std::vector<std::string> out;
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar() || n[i].Scalar().empty())
        fail(file_, key_ + "." + k + "[" + std::to_string(i) + "]", "must be a non-empty name" + line_of(n[i]));
      out.push_back(n[i].as<std::string>());
    }
    return out;
  }

 private:
  const std::string& file_;
  const YAML::Node node_;  // const: operator[] must never insert a missing key
  std::string key_;
};

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
  }
  return fp32_flops;
}

GpuCatalog GpuCatalog::load(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InputError(path + ": cannot open the GPU catalog file");
  } catch (const YAML::ParserException& e) {
    throw InputError(path + ": line " + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  }
  GpuCatalog cat;
  std::map<std::string, std::string> names;  // normalized name or alias -> canonical name (collision check)
  try {
    if (!root.IsMap()) fail(path, "(top level)", "must be a mapping with the single key 'gpus'");
    for (const auto& kv : root) {
      const std::string k = kv.first.as<std::string>();
      if (k != "gpus") fail(path, k, "unknown key" + line_of(kv.first) + "; allowed: gpus");
    }
    const YAML::Node list = static_cast<const YAML::Node&>(root)["gpus"];  // const: no insertion
    if (!list) fail(path, "gpus", "missing required key");
    if (!list.IsSequence() || list.size() == 0) fail(path, "gpus", "must be a non-empty list of GPUs" + line_of(list));

    static const std::set<std::string> required{"name",       "arch",       "sm_count",           "fp32_tflops",
                                                "tf32_tflops", "fp16_tflops", "bf16_tflops",        "fp8_tflops",
                                                "hbm_bandwidth_GBps",       "memory_GiB",         "nvswitch",
                                                "intra_node_GBps",          "source"};
    static const std::set<std::string> optional{"aliases", "nvlink_domain_gpus"};

    for (size_t i = 0; i < list.size(); ++i) {
      const std::string key = "gpus[" + std::to_string(i) + "]";
      const YAML::Node e = list[i];
      if (!e.IsMap()) fail(path, key, "must be a mapping of GPU fields" + line_of(e));
      EntryReader r(path, e, key);
      // Label messages with the GPU's name as early as it can be read, e.g. "gpus[3] (H100-SXM).nvlink".
      if (const YAML::Node nm = e["name"]; nm.IsDefined() && nm.IsScalar() && !nm.Scalar().empty())
        r.set_label(nm.Scalar());
      r.check_keys(required, optional);

      GpuSpec g;
      g.name = r.str("name");
      const std::string arch = r.str("arch");
      const std::optional<GpuArch> a = arch_named(arch);
      if (!a)
        fail(path, key + " (" + g.name + ").arch",
             "unknown architecture '" + arch + "'; allowed: volta, ampere, ada, hopper, blackwell");
      g.arch = *a;
      g.sm_count = r.positive_int("sm_count");
      constexpr double kTera = 1e12;
      g.fp32_flops = r.number("fp32_tflops", false) * kTera;
      g.tf32_flops = r.number("tf32_tflops", true) * kTera;
      g.fp16_flops = r.number("fp16_tflops", false) * kTera;
      g.bf16_flops = r.number("bf16_tflops", true) * kTera;
      g.fp8_flops = r.number("fp8_tflops", true) * kTera;
      g.hbm_bandwidth_Bps = r.number("hbm_bandwidth_GBps", false) * 1e9;
      g.memory_bytes = static_cast<uint64_t>(std::llround(r.number("memory_GiB", false) * 1073741824.0));
      g.nvswitch = r.boolean("nvswitch");
      g.intra_node_GBps = r.number("intra_node_GBps", false);
      if (e["nvlink_domain_gpus"].IsDefined()) g.nvlink_domain_gpus = r.positive_int("nvlink_domain_gpus");
      g.source = r.str("source");

      std::vector<std::string> labels{g.name};
      for (const auto& a : r.string_list("aliases")) {
        labels.push_back(a);
        g.aliases.push_back(normalize(a));
      }
      for (const auto& l : labels) {
        auto [it, inserted] = names.emplace(normalize(l), g.name);
        if (!inserted)
          fail(path, key + " (" + g.name + ")",
               "name or alias '" + l + "' is already used by GPU '" + it->second + "'");
      }
      cat.gpus_.push_back(std::move(g));
    }
  } catch (const YAML::Exception& e) {
    // Anything yaml-cpp rejects that the checks above did not name (odd key types, ...).
    throw InputError(path + ": " + e.what());
  }
  return cat;
}

const GpuSpec& GpuCatalog::find(const std::string& name) const {
  const std::string key = normalize(name);
  for (const auto& g : gpus_) {
    if (normalize(g.name) == key) return g;
  }
  for (const auto& g : gpus_) {
    for (const auto& a : g.aliases) {
      if (a == key) return g;
    }
  }
  std::string known;
  for (const auto& g : gpus_) known += (known.empty() ? "" : ", ") + g.name;
  throw InputError("unknown GPU '" + name + "' (key cluster.gpu); known: " + known);
}

std::string data_dir() {
  if (const char* env = std::getenv("STEPSIM_DATA_DIR"); env != nullptr && *env != '\0') return env;
#ifdef STEPSIM_SOURCE_DATA_DIR
  return STEPSIM_SOURCE_DATA_DIR;
#else
  return "data";
#endif
}

}  // namespace stepsim::hw
