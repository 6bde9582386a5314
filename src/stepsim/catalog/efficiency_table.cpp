// Loader of data/efficiency.yaml: strict parsing, merge defaults <- arch <- GPU (docs/COST-MODELS.md).
#include "stepsim/catalog/efficiency_table.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "stepsim/io/data_file.hpp"
#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {

struct EfficiencyCatalog::Partial {
  std::optional<std::vector<std::array<int32_t, 2>>> gemm_tiles;
  std::optional<double> gemm_tile_efficiency, gemm_wave_overhead_us, gemm_launch_us, gemm_group_overhead_us;
  std::array<std::optional<double>, kGemmScales> gemm_precision_scale;
  std::optional<double> grouped_gemm_scale;
  std::optional<double> attention_forward, attention_backward;
  std::optional<double> sdpa_flash_forward, sdpa_flash_backward;
  std::optional<std::vector<ShapePoint>> attention_sequence, attention_head_dim;
  std::array<std::optional<double>, static_cast<int>(MemoryClass::kCount)> memory;
  std::optional<double> kernel_floor_us, launch_gap_us, host_time_scale, host_to_device_GBps, cpu_optimizer_GBps;
  std::optional<double> sustained_clock, power_static_share, power_static_share_spread;
  std::optional<std::array<double, 2>> prediction_interval;
  std::optional<hw::KindIntervals> prediction_interval_by_kind;
  std::optional<hw::KindIntervals> prediction_interval_by_framework;
  std::optional<hw::NewSourceInterval> new_source_interval;
};

namespace {

using Partial = EfficiencyCatalog::Partial;

// spec::Precision order, then MXFP8 (fp8 with the mxfp8 recipe): kMxfp8GemmScale.
const char* const kPrecisionKeys[kGemmScales] = {"fp32", "fp16", "bf16", "fp8", "nvfp4", "mxfp8"};
const char* const kMemoryKeys[static_cast<int>(MemoryClass::kCount)] = {"stream", "elementwise", "norm",
                                                                          "embedding", "loss", "optimizer",
                                                                          "scatter_add"};

std::string normalize_name(const std::string& s) {  // same rule as the GPU catalog's name matching
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '_') c = '-';
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

using spec::line_of;

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The tables' shapes (partial tables, tiles, shape curves) over the data files' one strict reader.
class Parser {
 public:
  explicit Parser(const spec::DataFile& f) : f_(f) {}

  [[noreturn]] void fail(const std::string& key, const std::string& rule) const { f_.fail(key, rule); }

  // Keys of a mapping, every one optional, none outside `allowed`.
  std::set<std::string> keys(const YAML::Node& n, const std::string& key, const std::vector<std::string>& allowed) const {
    return f_.keys(n, key, {}, allowed);
  }

  double number(const YAML::Node& n, const std::string& key) const { return f_.number(n, key); }

  // A band of signed relative errors [low, high] at `key`; `around_zero`: it must hold 0 (a prediction's own point).
  std::array<double, 2> band(const YAML::Node& pi, const std::string& key, bool around_zero = false) const {
    if (!pi || !pi.IsSequence() || pi.size() != 2) fail(key, "must be [low, high] signed fractions");
    const double lo = number(pi[0], key + "[0]"), hi = number(pi[1], key + "[1]");
    const bool ok = around_zero ? lo > -1 && lo <= 0 && 0 <= hi && hi < 10 : lo > -1 && lo <= hi && hi < 10;
    if (!ok) {
      fail(key, std::string(around_zero ? "needs -1 < low <= 0 <= high < 10" : "needs -1 < low <= high < 10") +
                    ", got [" + fmt(lo) + ", " + fmt(hi) + "]");
    }
    return {lo, hi};
  }

  // How many runs (or sources) a band stands on: a whole number in [1, 1e6].
  int count(const YAML::Node& n, const std::string& key) const {
    const double v = number(n, key);
    if (!(v >= 1 && v <= 1e6 && v == std::floor(v))) fail(key, "must be a whole number in [1, 1e6], got " + fmt(v));
    return static_cast<int>(v);
  }

  double fraction(const YAML::Node& n, const std::string& key) const {
    const double v = number(n, key);
    if (!(v > 0 && v <= 1)) fail(key, "efficiency must be in (0, 1], got " + fmt(v) + line_of(n));
    return v;
  }

  // gemm_waves.tiles: 1 to 16 [rows, columns] pairs, each a multiple of 8 in [8, 1024].
  std::vector<std::array<int32_t, 2>> tiles(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence() || n.size() == 0 || n.size() > 16)
      fail(key, "must be a list of 1 to 16 [rows, columns] tile shapes" + line_of(n));
    std::vector<std::array<int32_t, 2>> out;
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string k = key + "[" + std::to_string(i) + "]";
      const YAML::Node p = n[i];
      if (!p.IsSequence() || p.size() != 2) fail(k, "must be a pair [rows, columns]" + line_of(p));
      std::array<int32_t, 2> t{};
      for (int j = 0; j < 2; ++j) {
        const double v = number(p[j], k + "[" + std::to_string(j) + "]");
        if (!(v >= 8 && v <= 1024 && std::fmod(v, 8) == 0))
          fail(k + "[" + std::to_string(j) + "]", "a tile side must be a multiple of 8 in [8, 1024], got " + fmt(v) + line_of(p));
        t[j] = static_cast<int32_t>(v);
      }
      out.push_back(t);
    }
    return out;
  }

  double microseconds(const YAML::Node& n, const std::string& key) const {
    const double v = number(n, key);
    if (v < 0 || v > 1e4) fail(key, "must be in [0, 10000] microseconds, got " + fmt(v) + line_of(n));
    return v;
  }

  // An attention shape curve: [[x, factor], ...] with x > 0 strictly increasing, factor in (0, 1].
  std::vector<ShapePoint> shape_curve(const YAML::Node& n, const std::string& key, const char* x_name) const {
    if (!n.IsSequence() || n.size() == 0 || n.size() > 64)
      fail(key, std::string("must be a list of 1 to 64 [") + x_name + ", factor] points" + line_of(n));
    std::vector<ShapePoint> pts;
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string k = key + "[" + std::to_string(i) + "]";
      const YAML::Node p = n[i];
      if (!p.IsSequence() || p.size() != 2) fail(k, std::string("must be a pair [") + x_name + ", factor]" + line_of(p));
      const ShapePoint c{number(p[0], k + "[0]"), fraction(p[1], k + "[1]")};
      if (!(c.x > 0 && c.x < 1e12)) fail(k + "[0]", std::string(x_name) + " must be in (0, 1e12), got " + fmt(c.x) + line_of(p));
      if (!pts.empty() && !(c.x > pts.back().x))
        fail(k, std::string(x_name) + " must increase from point to point (" + fmt(pts.back().x) + " then " + fmt(c.x) +
                    ")" + line_of(p));
      pts.push_back(c);
    }
    return pts;
  }

  // One table (defaults, archs.X or gpus.Y); every field optional.
  Partial table(const YAML::Node& n, const std::string& key) const {
    Partial t;
    if (n.IsNull()) return t;
    const auto present = keys(n, key,
                              {"gemm_waves", "gemm_precision_scale", "grouped_gemm_scale", "attention",
                               "sdpa_flash_attention", "memory_efficiency", "kernel_floor_us", "launch_gap_us",
                               "host_time_scale", "host_to_device_GBps", "cpu_optimizer_GBps", "sustained_clock",
                               "power_static_share", "power_static_share_spread", "prediction_interval",
                               "prediction_interval_by_kind",
                               "prediction_interval_by_framework", "new_source_interval"});
    if (present.count("gemm_waves")) {
      const YAML::Node w = n["gemm_waves"];
      const std::string k = key + ".gemm_waves";
      const auto have = keys(w, k, {"tiles", "efficiency", "wave_overhead_us", "launch_us", "group_overhead_us"});
      if (have.count("tiles")) t.gemm_tiles = tiles(w["tiles"], k + ".tiles");
      if (have.count("efficiency")) t.gemm_tile_efficiency = fraction(w["efficiency"], k + ".efficiency");
      if (have.count("wave_overhead_us")) t.gemm_wave_overhead_us = microseconds(w["wave_overhead_us"], k + ".wave_overhead_us");
      if (have.count("launch_us")) t.gemm_launch_us = microseconds(w["launch_us"], k + ".launch_us");
      if (have.count("group_overhead_us"))
        t.gemm_group_overhead_us = microseconds(w["group_overhead_us"], k + ".group_overhead_us");
    }
    if (present.count("gemm_precision_scale")) {
      const YAML::Node s = n["gemm_precision_scale"];
      const std::string k = key + ".gemm_precision_scale";
      const auto have = keys(s, k, {"fp32", "fp16", "bf16", "fp8", "nvfp4", "mxfp8"});
      for (int i = 0; i < kGemmScales; ++i)
        if (have.count(kPrecisionKeys[i]))
          t.gemm_precision_scale[i] = fraction(s[kPrecisionKeys[i]], k + "." + kPrecisionKeys[i]);
    }
    if (present.count("grouped_gemm_scale"))
      t.grouped_gemm_scale = fraction(n["grouped_gemm_scale"], key + ".grouped_gemm_scale");
    if (present.count("attention")) {
      const YAML::Node a = n["attention"];
      const auto have = keys(a, key + ".attention", {"forward", "backward", "sequence_curve", "head_dim_curve"});
      if (have.count("forward")) t.attention_forward = fraction(a["forward"], key + ".attention.forward");
      if (have.count("backward")) t.attention_backward = fraction(a["backward"], key + ".attention.backward");
      if (have.count("sequence_curve"))
        t.attention_sequence = shape_curve(a["sequence_curve"], key + ".attention.sequence_curve", "kv_tokens");
      if (have.count("head_dim_curve"))
        t.attention_head_dim = shape_curve(a["head_dim_curve"], key + ".attention.head_dim_curve", "head_dim");
    }
    if (present.count("sdpa_flash_attention")) {
      const YAML::Node a = n["sdpa_flash_attention"];
      const std::string k = key + ".sdpa_flash_attention";
      const auto have = keys(a, k, {"forward", "backward"});
      if (have.count("forward")) t.sdpa_flash_forward = fraction(a["forward"], k + ".forward");
      if (have.count("backward")) t.sdpa_flash_backward = fraction(a["backward"], k + ".backward");
    }
    if (present.count("memory_efficiency")) {
      const YAML::Node m = n["memory_efficiency"];
      const std::string k = key + ".memory_efficiency";
      const auto have =
          keys(m, k, std::vector<std::string>(kMemoryKeys, kMemoryKeys + static_cast<int>(MemoryClass::kCount)));
      for (int i = 0; i < static_cast<int>(MemoryClass::kCount); ++i)
        if (have.count(kMemoryKeys[i])) t.memory[i] = fraction(m[kMemoryKeys[i]], k + "." + kMemoryKeys[i]);
    }
    if (present.count("kernel_floor_us")) {
      const double v = number(n["kernel_floor_us"], key + ".kernel_floor_us");
      if (v < 0 || v > 1e6) fail(key + ".kernel_floor_us", "must be in [0, 1e6] microseconds, got " + fmt(v));
      t.kernel_floor_us = v;
    }
    if (present.count("launch_gap_us")) {
      const double v = number(n["launch_gap_us"], key + ".launch_gap_us");
      if (v < 0 || v > 1e6) fail(key + ".launch_gap_us", "must be in [0, 1e6] microseconds, got " + fmt(v));
      t.launch_gap_us = v;
    }
    if (present.count("host_time_scale")) {
      const double v = number(n["host_time_scale"], key + ".host_time_scale");
      if (v < 0 || v > 10) fail(key + ".host_time_scale", "must be in [0, 10] (0 = not modelled), got " + fmt(v));
      t.host_time_scale = v;
    }
    if (present.count("prediction_interval")) {
      t.prediction_interval = band(n["prediction_interval"], key + ".prediction_interval");
    }
    // Bands by kind of job or by framework: {name: {interval: [low, high], runs: N}} for the names allowed.
    auto read_bands = [&](const char* field, const std::vector<std::string>& names) {
      const YAML::Node by = n[field];
      const std::string k = key + "." + field;
      hw::KindIntervals out;
      for (const std::string& name : keys(by, k, names)) {
        const YAML::Node e = by[name];
        const std::string ek = k + "." + name;
        const auto have = keys(e, ek, {"interval", "runs", "power_limit_W"});
        const auto [lo, hi] = band(e["interval"], ek + ".interval");
        if (!e["runs"]) fail(ek + ".runs", "missing: the number of calibration runs behind the band");
        const int runs = count(e["runs"], ek + ".runs");
        double power_W = 0;
        if (have.count("power_limit_W")) {
          power_W = number(e["power_limit_W"], ek + ".power_limit_W");
          if (!(power_W > 0 && power_W <= 5000)) fail(ek + ".power_limit_W", "must be in (0, 5000] W, got " + fmt(power_W));
        }
        out[name] = hw::KindInterval{lo, hi, runs, power_W};
      }
      return out;
    };
    if (present.count("prediction_interval_by_kind")) {
      t.prediction_interval_by_kind =
          read_bands("prediction_interval_by_kind", {hw::kCalibrationKinds.begin(), hw::kCalibrationKinds.end()});
    }
    if (present.count("prediction_interval_by_framework")) {
      t.prediction_interval_by_framework = read_bands("prediction_interval_by_framework", {"torchtitan", "deepspeed"});
    }
    if (present.count("new_source_interval")) {
      const YAML::Node e = n["new_source_interval"];
      const std::string k = key + ".new_source_interval";
      keys(e, k, {"interval", "sources", "runs"});
      const auto [lo, hi] = band(e["interval"], k + ".interval", true);
      auto counted = [&](const char* field) {
        if (!e[field]) fail(k + "." + field, "missing: how many development " + std::string(field) + " the band is of");
        return count(e[field], k + "." + field);
      };
      t.new_source_interval = hw::NewSourceInterval{lo, hi, counted("sources"), counted("runs")};
    }
    if (present.count("sustained_clock")) t.sustained_clock = fraction(n["sustained_clock"], key + ".sustained_clock");
    if (present.count("power_static_share")) {
      const double v = number(n["power_static_share"], key + ".power_static_share");
      if (!(v >= 0 && v < 0.9)) fail(key + ".power_static_share", "must be in [0, 0.9), got " + fmt(v));
      t.power_static_share = v;
    }
    if (present.count("power_static_share_spread")) {
      const double v = number(n["power_static_share_spread"], key + ".power_static_share_spread");
      if (!(v >= 0 && v < 0.5)) fail(key + ".power_static_share_spread", "must be in [0, 0.5), got " + fmt(v));
      t.power_static_share_spread = v;
    }
    if (present.count("host_to_device_GBps")) {
      const double v = number(n["host_to_device_GBps"], key + ".host_to_device_GBps");
      if (!(v > 0)) fail(key + ".host_to_device_GBps", "must be > 0 GB/s, got " + fmt(v));
      t.host_to_device_GBps = v;
    }
    if (present.count("cpu_optimizer_GBps")) {
      const double v = number(n["cpu_optimizer_GBps"], key + ".cpu_optimizer_GBps");
      if (!(v > 0)) fail(key + ".cpu_optimizer_GBps", "must be > 0 GB/s, got " + fmt(v));
      t.cpu_optimizer_GBps = v;
    }
    return t;
  }

 private:
  const spec::DataFile& f_;
};

template <typename T>
void take(std::optional<T>& dst, const std::optional<T>& src) {
  if (src) dst = src;
}

Partial merge(const Partial& base, const Partial& over) {
  Partial r = base;
  take(r.gemm_tiles, over.gemm_tiles);
  take(r.gemm_tile_efficiency, over.gemm_tile_efficiency);
  take(r.gemm_wave_overhead_us, over.gemm_wave_overhead_us);
  take(r.gemm_launch_us, over.gemm_launch_us);
  take(r.gemm_group_overhead_us, over.gemm_group_overhead_us);
  for (size_t i = 0; i < r.gemm_precision_scale.size(); ++i) take(r.gemm_precision_scale[i], over.gemm_precision_scale[i]);
  take(r.grouped_gemm_scale, over.grouped_gemm_scale);
  take(r.attention_forward, over.attention_forward);
  take(r.attention_backward, over.attention_backward);
  take(r.sdpa_flash_forward, over.sdpa_flash_forward);
  take(r.sdpa_flash_backward, over.sdpa_flash_backward);
  take(r.attention_sequence, over.attention_sequence);
  take(r.attention_head_dim, over.attention_head_dim);
  for (size_t i = 0; i < r.memory.size(); ++i) take(r.memory[i], over.memory[i]);
  take(r.kernel_floor_us, over.kernel_floor_us);
  take(r.launch_gap_us, over.launch_gap_us);
  take(r.host_time_scale, over.host_time_scale);
  take(r.host_to_device_GBps, over.host_to_device_GBps);
  take(r.cpu_optimizer_GBps, over.cpu_optimizer_GBps);
  take(r.sustained_clock, over.sustained_clock);
  take(r.power_static_share, over.power_static_share);
  take(r.power_static_share_spread, over.power_static_share_spread);
  take(r.prediction_interval, over.prediction_interval);
  take(r.prediction_interval_by_kind, over.prediction_interval_by_kind);
  take(r.prediction_interval_by_framework, over.prediction_interval_by_framework);
  take(r.new_source_interval, over.new_source_interval);
  return r;
}

// A merged table must have every field; `what` names the tables merged, e.g. "archs.hopper (over defaults)".
EfficiencyTable complete(const Partial& p, const std::string& file, const std::string& what) {
  auto need = [&](bool ok, const std::string& key) {
    if (!ok) throw InputError(file + ": " + what + ": missing key " + key + " (set it there or in defaults)");
  };
  EfficiencyTable t;
  need(p.gemm_tiles.has_value(), "gemm_waves.tiles");
  need(p.gemm_tile_efficiency.has_value(), "gemm_waves.efficiency");
  need(p.gemm_wave_overhead_us.has_value(), "gemm_waves.wave_overhead_us");
  need(p.gemm_launch_us.has_value(), "gemm_waves.launch_us");
  need(p.gemm_group_overhead_us.has_value(), "gemm_waves.group_overhead_us");
  t.gemm_waves = GemmWaves{*p.gemm_tiles, *p.gemm_tile_efficiency, *p.gemm_wave_overhead_us, *p.gemm_launch_us,
                           *p.gemm_group_overhead_us};
  for (int i = 0; i < kGemmScales; ++i) {
    // The block-scaled formats (nvfp4, mxfp8) take fp8's scale where a table leaves them out.
    const bool block_scaled = i >= static_cast<int>(spec::Precision::Nvfp4);
    std::optional<double> v = p.gemm_precision_scale[i];
    if (block_scaled && !v) v = p.gemm_precision_scale[static_cast<int>(spec::Precision::Fp8)];
    need(v.has_value(), std::string("gemm_precision_scale.") + kPrecisionKeys[i]);
    t.gemm_precision_scale[i] = *v;
  }
  need(p.grouped_gemm_scale.has_value(), "grouped_gemm_scale");
  t.grouped_gemm_scale = *p.grouped_gemm_scale;
  need(p.attention_forward.has_value(), "attention.forward");
  t.attention_forward = *p.attention_forward;
  need(p.attention_backward.has_value(), "attention.backward");
  t.attention_backward = *p.attention_backward;
  // Where a table gives no figures of its own for PyTorch's FlashAttention-2, its attention kernels are as fast.
  t.sdpa_flash_forward = p.sdpa_flash_forward.value_or(t.attention_forward);
  t.sdpa_flash_backward = p.sdpa_flash_backward.value_or(t.attention_backward);
  t.attention_sequence = p.attention_sequence.value_or(std::vector<ShapePoint>{});
  t.attention_head_dim = p.attention_head_dim.value_or(std::vector<ShapePoint>{});
  for (int i = 0; i < static_cast<int>(MemoryClass::kCount); ++i) {
    need(p.memory[i].has_value(), std::string("memory_efficiency.") + kMemoryKeys[i]);
    t.memory[i] = *p.memory[i];
  }
  need(p.kernel_floor_us.has_value(), "kernel_floor_us");
  t.kernel_floor_us = *p.kernel_floor_us;
  t.launch_gap_us = p.launch_gap_us.value_or(0.0);  // optional: absent = kernels issued back to back (a CUDA graph)
  t.host_time_scale = p.host_time_scale.value_or(0.0);  // optional: absent = the host is not modelled
  need(p.host_to_device_GBps.has_value(), "host_to_device_GBps");
  t.host_to_device_GBps = *p.host_to_device_GBps;
  need(p.cpu_optimizer_GBps.has_value(), "cpu_optimizer_GBps");
  t.cpu_optimizer_GBps = *p.cpu_optimizer_GBps;
  t.sustained_clock = p.sustained_clock.value_or(1.0);
  t.power_static_share = p.power_static_share.value_or(0.0);  // optional: absent = all power scales with the clock
  t.power_static_share_spread = p.power_static_share_spread.value_or(0.0);  // optional: absent = no widening
  t.prediction_interval = p.prediction_interval;
  t.prediction_interval_by_kind = p.prediction_interval_by_kind.value_or(hw::KindIntervals{});
  t.prediction_interval_by_framework = p.prediction_interval_by_framework.value_or(hw::KindIntervals{});
  t.new_source_interval = p.new_source_interval;
  return t;
}

}  // namespace

namespace {
double shape_factor(const std::vector<ShapePoint>& c, double x) {
  if (c.empty() || !(x > 0)) return 1.0;
  if (x <= c.front().x) return c.front().factor;
  if (x >= c.back().x) return c.back().factor;
  auto hi = std::upper_bound(c.begin(), c.end(), x, [](double v, const ShapePoint& p) { return v < p.x; });
  auto lo = hi - 1;
  const double f = std::log2(x / lo->x) / std::log2(hi->x / lo->x);
  return lo->factor + f * (hi->factor - lo->factor);
}
}  // namespace

double EfficiencyTable::attention_shape_factor(double kv_tokens, double head_dim) const {
  return shape_factor(attention_sequence, kv_tokens) * shape_factor(attention_head_dim, head_dim);
}

EfficiencyCatalog EfficiencyCatalog::load(const std::string& path) {
  const spec::DataFile file(path, "efficiency table file");
  Parser p(file);
  EfficiencyCatalog cat;
  cat.path_ = path;
  try {
    const YAML::Node& r = file.root();
    if (!r.IsMap()) p.fail("(top level)", "must be a mapping with keys defaults, archs, gpus");
    const auto top = p.keys(r, "(top level)", {"defaults", "archs", "gpus"});
    if (!top.count("defaults")) p.fail("defaults", "missing required key");
    if (!top.count("archs")) p.fail("archs", "missing required key");
    cat.defaults_ = std::make_shared<const Partial>(p.table(r["defaults"], "defaults"));

    const YAML::Node archs = r["archs"];
    if (!archs.IsMap() || archs.size() == 0) p.fail("archs", "must be a non-empty mapping arch -> table" + line_of(archs));
    for (const auto& kv : archs) {
      const std::string arch = kv.first.as<std::string>();
      if (cat.archs_.count(arch)) p.fail("archs." + arch, "duplicate key" + line_of(kv.first));
      cat.archs_[arch] = std::make_shared<const Partial>(p.table(kv.second, "archs." + arch));
      // Every arch must be complete over the defaults: report a gap now, not at the first simulation.
      complete(merge(*cat.defaults_, *cat.archs_[arch]), path, "archs." + arch + " (over defaults)");
    }

    if (top.count("gpus")) {
      const YAML::Node gpus = r["gpus"];
      if (!gpus.IsNull()) {
        if (!gpus.IsMap()) p.fail("gpus", "must be a mapping GPU name -> table" + line_of(gpus));
        for (const auto& kv : gpus) {
          const std::string name = kv.first.as<std::string>();
          const std::string norm = normalize_name(name);
          if (cat.gpus_.count(norm)) p.fail("gpus." + name, "duplicate GPU" + line_of(kv.first));
          cat.gpus_[norm] = std::make_shared<const Partial>(p.table(kv.second, "gpus." + name));
        }
      }
    }
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": " + e.what());  // what the checks above did not name (odd key types, ...)
  }
  return cat;
}


EfficiencyTable EfficiencyCatalog::resolve_arch(const std::string& arch) const {
  auto it = archs_.find(arch);
  if (it == archs_.end()) {
    std::string known;
    for (const auto& [a, t] : archs_) known += (known.empty() ? "" : ", ") + a;
    throw InputError(path_ + ": archs." + arch + ": no efficiency table for this architecture; known: " + known);
  }
  return complete(merge(*defaults_, *it->second), path_, "archs." + arch + " (over defaults)");
}

EfficiencyTable EfficiencyCatalog::resolve(const hw::GpuSpec& gpu) const {
  const std::string arch = hw::name_of(gpu.arch);
  auto it = archs_.find(arch);
  if (it == archs_.end()) {
    std::string known;
    for (const auto& [a, t] : archs_) known += (known.empty() ? "" : ", ") + a;
    throw InputError(path_ + ": archs." + arch + ": no efficiency table for the architecture of GPU '" +
                     gpu.name + "'; known: " + known);
  }
  Partial p = merge(*defaults_, *it->second);
  std::string what = "archs." + arch + " (over defaults)";
  if (auto g = gpus_.find(normalize_name(gpu.name)); g != gpus_.end()) {
    p = merge(p, *g->second);
    what = "gpus." + gpu.name + " (over archs." + arch + " and defaults)";
  }
  return complete(p, path_, what);
}

std::vector<std::string> EfficiencyCatalog::archs() const {
  std::vector<std::string> out;
  for (const auto& [a, t] : archs_) out.push_back(a);
  return out;
}

}  // namespace stepsim::cost
