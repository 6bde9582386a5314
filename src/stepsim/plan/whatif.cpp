#include "stepsim/plan/whatif.hpp"

#include <cmath>
#include <functional>
#include <set>

#include "stepsim/plan/reliability.hpp"
#include "stepsim/report/summary.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/job/cluster_rates.hpp"

namespace stepsim::plan {
namespace {

enum class Kind { Count, Real, Bandwidth, NumGpus };

// A scalable key: where it lives in the tree, its aliases and the value the validated job has.
struct Key {
  const char* path;     // dotted; for Bandwidth the link section's key is "bandwidth" (+ _GBps / _Gbps)
  const char* aliases;  // comma-separated
  Kind kind;
  std::function<double(const spec::JobSpec&)> value;
};

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      {"cluster.num_gpus", "num_gpus,gpus", Kind::NumGpus, [](const auto& j) { return j.cluster.num_gpus; }},
      {"cluster.gpus_per_node", "gpus_per_node", Kind::Count, [](const auto& j) { return j.cluster.gpus_per_node; }},
      {"cluster.inter_node.bandwidth_GBps", "inter_node_bandwidth,nic_bandwidth", Kind::Bandwidth,
       [](const auto& j) { return j.cluster.inter_node.bandwidth_GBps; }},
      {"cluster.intra_node.bandwidth_GBps", "intra_node_bandwidth,nvlink_bandwidth", Kind::Bandwidth,
       [](const auto& j) { return j.cluster.intra_node.bandwidth_GBps; }},
      {"cluster.inter_node.latency_us", "inter_node_latency", Kind::Real,
       [](const auto& j) { return j.cluster.inter_node.latency_us; }},
      {"cluster.intra_node.latency_us", "intra_node_latency", Kind::Real,
       [](const auto& j) { return j.cluster.intra_node.latency_us; }},
      {"training.global_batch_size", "global_batch_size", Kind::Count,
       [](const auto& j) { return static_cast<double>(j.training.global_batch_size); }},
      {"training.micro_batch_size", "micro_batch_size", Kind::Count,
       [](const auto& j) { return j.training.micro_batch_size; }},
      {"model.num_layers", "num_layers", Kind::Count, [](const auto& j) { return j.model.num_layers; }},
      {"model.hidden_size", "hidden_size", Kind::Count,
       [](const auto& j) { return static_cast<double>(j.model.hidden_size); }},
      {"model.ffn_hidden_size", "ffn_hidden_size", Kind::Count,
       [](const auto& j) { return static_cast<double>(j.model.ffn_hidden_size); }},
      {"model.num_attention_heads", "num_attention_heads", Kind::Count,
       [](const auto& j) { return j.model.num_attention_heads; }},
      {"model.seq_length", "seq_length", Kind::Count, [](const auto& j) { return static_cast<double>(j.model.seq_length); }},
      {"model.vocab_size", "vocab_size", Kind::Count, [](const auto& j) { return static_cast<double>(j.model.vocab_size); }},
  };
  return k;
}

const Key* find_key(const std::string& name) {
  for (const Key& k : keys()) {
    if (name == k.path) return &k;
    std::string a = k.aliases;
    size_t start = 0;
    while (start <= a.size()) {
      const size_t end = a.find(',', start);
      if (a.substr(start, end == std::string::npos ? std::string::npos : end - start) == name) return &k;
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return nullptr;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// The map at `path` (all but the last component), created where missing.
YAML::Node section(YAML::Node root, const std::string& path) {
  YAML::Node cur = root;
  size_t start = 0;
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
    const std::string part = path.substr(start, dot - start);
    if (!cur[part].IsMap()) cur[part] = YAML::Node(YAML::NodeType::Map);
    YAML::Node next = cur[part];
    cur.reset(next);
    start = dot + 1;
  }
  return cur;
}

std::string leaf(const std::string& path) { return path.substr(path.rfind('.') + 1); }

int64_t whole(const std::string& what, double v) {
  const double r = std::round(v);
  if (std::fabs(v - r) > 1e-9 * std::max(1.0, std::fabs(v)) || r < 1)
    throw InputError(what + " would be " + num(v) + ", not a positive whole number");
  return static_cast<int64_t>(r);
}

}  // namespace

Scale parse_scale(const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--scale " + arg + ": expected KEY=FACTOR, e.g. --scale inter_node_bandwidth=2");
  Scale s{arg.substr(0, eq), 0};
  const std::string f = arg.substr(eq + 1);
  char* end = nullptr;
  s.factor = std::strtod(f.c_str(), &end);
  if (f.empty() || *end != '\0' || !std::isfinite(s.factor) || !(s.factor > 0) || s.factor > 1e6)
    throw InputError("--scale " + arg + ": the factor must be a number in (0, 1e6], got '" + f + "'");
  return s;
}

std::string scalable_keys_text() {
  std::string t;
  for (const Key& k : keys()) t += std::string(t.empty() ? "" : ", ") + k.path + " (" + k.aliases + ")";
  return t;
}

std::string scaled_key_path(const std::string& name) {
  const Key* k = find_key(name);
  return k ? k->path : "";
}

YAML::Node apply_scales(const YAML::Node& root, const spec::JobSpec& base, const std::vector<Scale>& scales) {
  YAML::Node out = YAML::Clone(root);
  std::set<const Key*> seen;
  for (const Scale& s : scales) {
    const std::string flag = "--scale " + s.key + "=" + num(s.factor);
    const Key* k = find_key(s.key);
    if (!k) throw InputError(flag + ": not a key whatif scales; one of " + scalable_keys_text());
    if (!seen.insert(k).second) throw InputError(flag + ": " + k->path + " is scaled twice");
    const double v = k->value(base) * s.factor;
    YAML::Node sec = section(out, k->path);
    switch (k->kind) {
      case Kind::Count: sec[leaf(k->path)] = whole(flag + ": " + k->path, v); break;
      case Kind::Real: sec[leaf(k->path)] = v; break;
      case Kind::Bandwidth:
        // The file may give the rate in Gb/s; the scaled one is written in GB/s, the only one left.
        sec.remove("bandwidth_Gbps");
        sec["bandwidth_GBps"] = v;
        break;
      case Kind::NumGpus: {
        sec["num_gpus"] = whole(flag + ": cluster.num_gpus", v);
        section(out, "parallelism.data")["data"] =
            whole(flag + ": parallelism.data (scaled with the GPUs)", base.parallelism.data * s.factor);
        break;
      }
    }
  }
  return out;
}

Outcome evaluate(const catalog::Catalog& cat, const spec::JobSpec& job, const WhatIfSettings& s) {
  const sim::Simulation sim = sim::run_simulation(cat, job, {0});
  const report::Summary sum = report::summarize(sim, 0);
  Outcome o;
  o.step_time_s = sum.step_time_s;
  o.mfu = sum.mfu;
  if (sum.mfu_peak_tflops != sum.bf16_peak_tflops) o.mfu_of = sum.mfu_precision;
  o.tokens_per_s = sum.tokens_per_s;
  o.tflops_per_gpu = sum.tflops_per_gpu;
  o.oom = sum.oom;
  o.memory_tight = sum.memory_tight;
  o.intra_node_GBps = job.cluster.intra_node.bandwidth_GBps;
  o.inter_node = spec::inter_node_text(job.cluster, sum.inter_node_efficiency);
  o.notes = sum.notes;
  o.gpus = job.cluster.num_gpus;
  o.nodes = (job.cluster.num_gpus + job.cluster.gpus_per_node - 1) / job.cluster.gpus_per_node;
  ReliabilityInputs in;
  in.step_time_s = o.step_time_s;
  in.nodes = o.nodes;
  in.failures_per_node_day = s.failures_per_node_day;
  in.save_time_s = checkpoint_save_time_s(checkpoint_bytes(job), s.storage_GBps * 1e9);
  in.steps = s.steps;
  if (failure_load(in, 1) >= 1) {
    throw InputError("--failure-rate: " + std::to_string(o.nodes) + " nodes fail faster than they are repaired");
  }
  o.interval_steps = optimal_interval(in);
  o.ettr = ettr(in, o.interval_steps);
  o.e2e_s = e2e_time(in, o.interval_steps).total_s;
  o.gpu_hours = o.e2e_s / 3600.0 * o.gpus;
  o.cost_usd = o.gpu_hours * s.usd_per_gpu_hour;
  return o;
}

}  // namespace stepsim::plan
