#include "stepsim/input/deepspeed_config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stepsim/input/hf_config.hpp"
#include "stepsim/input/strict_json.hpp"
#include "stepsim/input/torchtitan_toml.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/io/printable.hpp"
#include "stepsim/io/yaml_reader.hpp"

namespace stepsim::spec {

namespace {

using nlohmann::json;

// Root key of what resolve_deepspeed_degrees completes (removed there).
constexpr const char* kDeepSpeedPendingKey = "_deepspeed_pending";

// Keys that change nothing of a step's time or memory: logging, monitors, profilers, the learning-rate schedule,
// checkpoint and launch options.
const std::set<std::string> kNoEffectKeys{
    "steps_per_print",   "wall_clock_breakdown", "dump_state",        "tensorboard",      "wandb",
    "csv_monitor",       "comet",                "flops_profiler",    "comms_logger",     "scheduler",
    "checkpoint",        "elasticity",           "zero_allow_untested_optimizer",         "memory_breakdown",
    "gradient_clipping", "prescale_gradients",   "gradient_predivide_factor",             "aio",
    "sparse_gradients",  "dataloader_drop_last", "timers",            "monitor_config"};

// Top-level keys that change the step in ways the DeepSpeed profile does not model: refused by name.
const std::map<std::string, std::string> kRefusedKeys{
    {"amp", "Apex AMP is not modelled; use bf16 or fp16"},
    {"pipeline", "DeepSpeed's pipeline engine is not modelled under framework deepspeed"},
    {"sequence_parallel_size", "DeepSpeed-Ulysses sequence parallelism is not modelled"},
    {"tensor_parallel", "DeepSpeed's AutoTP is not modelled"},
    {"compression_training", "compression training is not modelled"},
    {"data_efficiency", "data-efficiency curricula change the tokens per step: not modelled"},
    {"curriculum_learning", "curricula change the tokens per step: not modelled"},
    {"communication_data_type", "the gradient reduction is costed in the model's dtype (DeepSpeed's default)"},
    {"data_types", "DeepSpeed's gradient-accumulation dtype is costed as the model's (its default)"},
    {"fp8", "fp8 training is not modelled under framework deepspeed"},
    {"torch_autocast", "torch.autocast under DeepSpeed is not modelled; use bf16 or fp16"},
    {"hybrid_engine", "the hybrid engine (RLHF generation) is not modelled"}};

// zero_optimization keys with no effect on a ZeRO-3 step's time or memory as the profile costs it.
const std::set<std::string> kZeroNoEffectKeys{"stage3_gather_16bit_weights_on_model_save",
                                              "stage3_gather_fp16_weights_on_model_save",
                                              "gather_16bit_weights_on_model_save",
                                              "load_from_fp32_weights",
                                              "elastic_checkpoint",
                                              "ignore_unused_parameters",
                                              "legacy_stage1",
                                              "round_robin_gradients",
                                              "log_trace_cache_warnings",
                                              "pipeline_loading_checkpoint",
                                              "override_module_apply",
                                              "memory_efficient_linear",
                                              "contiguous_gradients",
                                              "allgather_partitions",
                                              "allgather_bucket_size",
                                              "reduce_scatter",
                                              "use_multi_rank_bucket_allreduce"};
// zero_optimization keys that shape ZeRO-3's gathers, which the profile times per module (a gather of each module's
// parameters before it, prefetched one module ahead): read, named in a note as not changing that schedule.
const std::set<std::string> kZeroScheduleKeys{"stage3_prefetch_bucket_size",        "prefetch_bucket_size",
                                              "stage3_param_persistence_threshold", "param_persistence_threshold",
                                              "stage3_model_persistence_threshold", "model_persistence_threshold",
                                              "stage3_max_live_parameters",         "max_live_parameters",
                                              "stage3_max_reuse_distance",          "max_reuse_distance",
                                              "sub_group_size",                     "stage3_module_granularity_threshold",
                                              "module_granularity_threshold"};

class DsConfig {
 public:
  DsConfig(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& rule) const {
    throw InputError(source_ + ": " + key + ": " + rule);
  }
  // nullptr when absent. HF Trainer's "auto" is refused: the Trainer fills it from its own arguments.
  const json* get(const json& obj, const std::string& key, const std::string& path) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    if (it->is_string() && it->get<std::string>() == "auto") {
      fail(path, "\"auto\" is filled in by the Hugging Face Trainer from its own arguments; write the value");
    }
    return &*it;
  }
  std::optional<int64_t> integer(const json& obj, const std::string& key, const std::string& path, int64_t lo,
                                 int64_t hi) const {
    const json* v = get(obj, key, path);
    if (!v) return std::nullopt;
    // DeepSpeed's own configs write sizes as floats ("5e8"): an integral value is accepted.
    double d = 0;
    if (v->is_number_unsigned()) d = static_cast<double>(v->get<uint64_t>());
    else if (v->is_number_integer()) d = static_cast<double>(v->get<int64_t>());
    else if (v->is_number_float()) d = v->get<double>();
    else fail(path, "must be a number");
    // The range first: a value beyond int64 (a float such as 3e118) must not be converted to see if it is integral.
    if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)) || std::trunc(d) != d) {
      fail(path, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return static_cast<int64_t>(d);
  }
  std::optional<bool> boolean(const json& obj, const std::string& key, const std::string& path) const {
    const json* v = get(obj, key, path);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail(path, "must be true or false");
    return v->get<bool>();
  }
  const json& object(const json& obj, const std::string& key, const std::string& path) const {
    static const json empty = json::object();
    const json* v = get(obj, key, path);
    if (!v) return empty;
    if (!v->is_object()) fail(path, "must be an object");
    return *v;
  }
  const json& root() const { return j_; }

 private:
  const json& j_;
  std::string source_;
};

struct DsJob {
  YAML::Node training{YAML::NodeType::Map};
  std::vector<std::string> notes;
  std::optional<int64_t> train_batch, micro_batch, accumulation;
};

// bf16 / fp16: the model dtype (fp32 without either). fp16's loss-scaling keys change no time.
void read_precision(const DsConfig& c, DsJob& d) {
  const bool bf16 = c.boolean(c.object(c.root(), "bf16", "bf16"), "enabled", "bf16.enabled").value_or(false);
  const json& fp16_section = c.object(c.root(), "fp16", "fp16");
  const bool fp16 = c.boolean(fp16_section, "enabled", "fp16.enabled").value_or(false);
  if (bf16 && fp16) c.fail("fp16.enabled", "cannot be on with bf16.enabled");
  if (const json& b = c.object(c.root(), "bf16", "bf16"); b.contains("immediate_grad_update") ||
                                                           b.contains("check_grad_overflow")) {
    d.notes.push_back("bf16: options other than `enabled` change no time here");
  }
  d.training["precision"] = bf16 ? "bf16" : fp16 ? "fp16" : "fp32";
  if (!bf16 && !fp16) d.notes.push_back("precision: neither bf16 nor fp16 enabled: fp32 (DeepSpeed's default)");
}

void read_zero(const DsConfig& c, DsJob& d) {
  const json& z = c.object(c.root(), "zero_optimization", "zero_optimization");
  const int64_t stage = c.integer(z, "stage", "zero_optimization.stage", 0, 3).value_or(0);
  if (stage != 3) {
    c.fail("zero_optimization.stage", std::to_string(stage) + ": framework deepspeed is modelled at ZeRO stage 3 "
                                                               "(stages 0-2 are not yet; docs/MODEL.md \"Frameworks\")");
  }
  d.training["zero_stage"] = 3;
  if (auto b = c.integer(z, "reduce_bucket_size", "zero_optimization.reduce_bucket_size", 1, int64_t{1} << 40)) {
    d.training["reduce_bucket_size"] = *b;
  }
  // DeepSpeed's default at stage 3, and what the profile costs (gathers and reduce-scatters on their own streams).
  if (!c.boolean(z, "overlap_comm", "zero_optimization.overlap_comm").value_or(true)) {
    c.fail("zero_optimization.overlap_comm", "false is not modelled (the profile overlaps as DeepSpeed's stage-3 "
                                             "default does)");
  }
  std::vector<std::string> schedule, none;
  for (auto it = z.begin(); it != z.end(); ++it) {
    const std::string k = it.key();
    const std::string path = "zero_optimization." + k;
    if (k == "stage" || k == "reduce_bucket_size" || k == "overlap_comm") continue;
    if (k == "offload_optimizer" || k == "offload_param" || k == "cpu_offload" || k == "cpu_offload_param") {
      const json& off = it.value();
      const bool to_none = off.is_object() && off.value("device", std::string("none")) == "none";
      if ((off.is_boolean() && !off.get<bool>()) || to_none || off.is_null()) {
        none.push_back(k + " (off)");
        continue;
      }
      c.fail(path, "offloading under ZeRO-3 (ZeRO-Offload/Infinity) is not modelled");
    }
    if (k == "zero_hpz_partition_size") {
      if (c.integer(z, k, path, 0, int64_t{1} << 20).value_or(1) <= 1) continue;
      c.fail(path, "ZeRO++'s hierarchical partitioning is not modelled");
    }
    if (k == "zero_quantized_weights" || k == "zero_quantized_gradients" || k == "zero_quantized_nontrainable_weights") {
      if (!c.boolean(z, k, path).value_or(false)) continue;
      c.fail(path, "ZeRO++'s quantized communication is not modelled");
    }
    if (k == "mics_shard_size") {
      if (c.integer(z, k, path, -1, int64_t{1} << 20).value_or(-1) <= 0) continue;
      c.fail(path, "MiCS sharding is not modelled");
    }
    if (k == "mics_hierarchical_params_gather" || k == "stage3_use_all_reduce_for_fetch_params" ||
        k == "use_all_reduce_for_fetch_params" || k == "zeropp_loco_param") {
      if (it.value().is_null() || (it.value().is_boolean() && !it.value().get<bool>())) continue;
      c.fail(path, "not modelled");
    }
    if (kZeroScheduleKeys.count(k)) schedule.push_back(k);
    else if (kZeroNoEffectKeys.count(k)) none.push_back(k);
    else c.fail(path, "unknown key (DeepSpeed's runtime/zero/config.py has no such key)");
  }
  if (!schedule.empty()) {
    std::string s;
    for (const std::string& k : schedule) s += (s.empty() ? "" : ", ") + k;
    d.notes.push_back("zero_optimization: " + s + ": read; the profile gathers each module's parameters before it, "
                      "prefetched one module ahead, whatever these say");
  }
  if (!none.empty()) {
    std::string s;
    for (const std::string& k : none) s += (s.empty() ? "" : ", ") + k;
    d.notes.push_back("zero_optimization: " + s + ": no effect on the step's time or memory here");
  }
}

void read_optimizer(const DsConfig& c, DsJob& d) {
  const json& o = c.object(c.root(), "optimizer", "optimizer");
  if (o.empty()) {
    d.notes.push_back("optimizer: not in the config (the client's): costed as Adam");
    return;
  }
  const json* type = c.get(o, "type", "optimizer.type");
  if (!type || !type->is_string()) c.fail("optimizer.type", "must be a string (Adam, AdamW)");
  std::string t = type->get<std::string>();
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (t != "adam" && t != "adamw" && t != "fusedadam") {
    c.fail("optimizer.type", "'" + printable(type->get<std::string>()) + "': only Adam and AdamW are modelled");
  }
  d.notes.push_back("optimizer: " + type->get<std::string>() + " (its params change no time)");
}

void read_batch(const DsConfig& c, DsJob& d) {
  d.train_batch = c.integer(c.root(), "train_batch_size", "train_batch_size", 1, int64_t{1} << 30);
  d.micro_batch = c.integer(c.root(), "train_micro_batch_size_per_gpu", "train_micro_batch_size_per_gpu", 1, 1 << 16);
  d.accumulation = c.integer(c.root(), "gradient_accumulation_steps", "gradient_accumulation_steps", 1, 1 << 20);
  if (!d.micro_batch && !(d.train_batch && d.accumulation)) {
    c.fail("train_micro_batch_size_per_gpu", "give it, or train_batch_size with gradient_accumulation_steps");
  }
}

}  // namespace

YAML::Node deepspeed_config_to_job_node(const std::string& ds_json, const std::string& ds_source,
                                        const std::string& hf_json, const std::string& hf_source) {
  const json j = parse_strict_json(ds_json, ds_source);
  if (!j.is_object()) throw InputError(ds_source + ": top level must be a JSON object");
  const DsConfig c(j, ds_source);
  DsJob d;
  d.training["framework"] = "deepspeed";
  std::vector<std::string> quiet;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string k = it.key();
    if (const auto r = kRefusedKeys.find(k); r != kRefusedKeys.end()) {
      const json& v = it.value();
      const bool off = v.is_null() || (v.is_boolean() && !v.get<bool>()) ||
                       (v.is_object() && v.contains("enabled") && v["enabled"].is_boolean() && !v["enabled"].get<bool>());
      if (!off) c.fail(k, r->second);
      quiet.push_back(k + " (off)");
      continue;
    }
    if (kNoEffectKeys.count(k)) {
      quiet.push_back(k);
      continue;
    }
    if (k == "activation_checkpointing") {
      d.notes.push_back("activation_checkpointing: DeepSpeed's checkpointing API acts only where the model calls it "
                        "(Megatron-DeepSpeed); a Hugging Face model's gradient checkpointing is "
                        "--set training.recompute=full");
      continue;
    }
    static const std::set<std::string> kRead{"train_batch_size", "train_micro_batch_size_per_gpu",
                                             "gradient_accumulation_steps", "bf16", "fp16", "zero_optimization",
                                             "optimizer"};
    if (!kRead.count(k)) c.fail(k, "unknown key (DeepSpeed's runtime/config.py has no such key)");
  }
  read_precision(c, d);
  read_zero(c, d);
  read_optimizer(c, d);
  read_batch(c, d);
  if (!quiet.empty()) {
    std::string s;
    for (const std::string& k : quiet) s += (s.empty() ? "" : ", ") + k;
    d.notes.push_back(s + ": no effect on the step's time or memory");
  }
  YAML::Node notes(YAML::NodeType::Sequence);
  for (const std::string& n : d.notes) notes.push_back(n);
  d.training[kInputNotesKey] = notes;
  if (d.micro_batch) d.training["micro_batch_size"] = *d.micro_batch;
  YAML::Node job(YAML::NodeType::Map);
  job["model"] = hf_config_to_model_node(hf_json, hf_source);
  YAML::Node p(YAML::NodeType::Map);
  p["tensor"] = 1;
  p["pipeline"] = 1;
  job["parallelism"] = p;
  job["training"] = d.training;
  YAML::Node pending(YAML::NodeType::Map);
  if (d.train_batch) pending["train_batch_size"] = *d.train_batch;
  if (d.accumulation) pending["gradient_accumulation_steps"] = *d.accumulation;
  job[kDeepSpeedPendingKey] = pending;
  return job;
}

void resolve_deepspeed_degrees(YAML::Node& root, const std::string& source) {
  const YAML::Node h = root[kDeepSpeedPendingKey];
  if (!h.IsMap()) return;
  // 0: the config does not give it.
  const int64_t train_batch = h["train_batch_size"] ? h["train_batch_size"].as<int64_t>() : 0;
  const int64_t accumulation = h["gradient_accumulation_steps"] ? h["gradient_accumulation_steps"].as<int64_t>() : 0;
  root.remove(kDeepSpeedPendingKey);
  YAML::Node p = root["parallelism"];
  YAML::Node t = root["training"];
  const auto positive = [&](const YAML::Node& v, const std::string& key) {
    return tree_positive_integer(v, key, source, 30);
  };
  if (!p["data"]) {
    const YAML::Node gpus = root["cluster"].IsMap() ? root["cluster"]["num_gpus"] : YAML::Node();
    if (!gpus.IsDefined()) throw InputError(source + ": the data-parallel degree needs the cluster's num_gpus");
    p["data"] = positive(gpus, "cluster.num_gpus");
  }
  const int64_t data = positive(p["data"], "parallelism.data");
  if (t["global_batch_size"]) return;  // given by an override
  // DeepSpeed's rule (runtime/config.py, _batch_assertion): train_batch = micro x accumulation x world size; any two
  // give the third.
  int64_t micro = t["micro_batch_size"] ? positive(t["micro_batch_size"], "training.micro_batch_size") : 0;
  if (micro == 0) {
    if (train_batch == 0 || accumulation == 0) {
      throw InputError(source + ": train_micro_batch_size_per_gpu: give it, or train_batch_size with "
                       "gradient_accumulation_steps");
    }
    if (train_batch % (accumulation * data) != 0) {
      throw InputError(source + ": train_batch_size " + std::to_string(train_batch) + " is not divisible by " +
                       "gradient_accumulation_steps x GPUs = " + std::to_string(accumulation * data));
    }
    micro = train_batch / (accumulation * data);
    t["micro_batch_size"] = micro;
  }
  const int64_t derived = micro * std::max<int64_t>(accumulation, 1) * data;
  if (train_batch > 0 && accumulation > 0 && train_batch != derived) {
    throw InputError(source + ": train_batch_size " + std::to_string(train_batch) + " is not " +
                     "train_micro_batch_size_per_gpu x gradient_accumulation_steps x GPUs = " +
                     std::to_string(derived) + " (DeepSpeed refuses it too)");
  }
  if (train_batch > 0 && accumulation == 0 && train_batch % (micro * data) != 0) {
    throw InputError(source + ": train_batch_size " + std::to_string(train_batch) + " is not a multiple of " +
                     "train_micro_batch_size_per_gpu x GPUs = " + std::to_string(micro * data));
  }
  t["global_batch_size"] = train_batch > 0 ? train_batch : derived;
}

}  // namespace stepsim::spec
