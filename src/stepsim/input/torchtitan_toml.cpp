#include "stepsim/input/torchtitan_toml.hpp"

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <toml++/toml.h>  // Debian's compiled library: its CMake target sets TOML_HEADER_ONLY=0

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"
#include "stepsim/io/yaml_reader.hpp"

namespace stepsim::spec {

namespace {

// torchtitan's Llama 3 flavors (torchtitan/models/llama/__init__.py at 9dec370) and its FFN width rule
// (model.py FeedForward: 2/3 of 4 dim, times ffn_dim_multiplier, rounded up to multiple_of).
struct Llama3Flavor {
  int64_t dim, layers, heads, kv_heads;
  double ffn_multiplier;  // 0: none
  int64_t multiple_of;
  int64_t ffn() const {
    int64_t hidden = 2 * (4 * dim) / 3;
    if (ffn_multiplier > 0) hidden = static_cast<int64_t>(ffn_multiplier * static_cast<double>(hidden));
    return multiple_of * ((hidden + multiple_of - 1) / multiple_of);
  }
};
const std::map<std::string, Llama3Flavor>& llama3_flavors() {
  static const std::map<std::string, Llama3Flavor> f{{"debugmodel", {256, 8, 16, 16, 0, 256}},
                                               {"8B", {4096, 32, 32, 8, 1.3, 1024}},
                                               {"70B", {8192, 80, 64, 8, 1.3, 4096}},
                                               {"405B", {16384, 126, 128, 8, 1.2, 4096}}};
  return f;
}
// Root key of what resolve_torchtitan_degrees completes (removed there).
constexpr const char* kPendingKey = "_torchtitan_pending";

// Llama 3's tiktoken vocabulary (torchtitan sets vocab_size from the tokenizer it loads).
constexpr int64_t kLlama3Vocab = 128256;

// Sections whose keys change nothing of a step's time or memory (paths, logging, profiling, checkpoint saving,
// timeouts, the memory estimator).
const std::set<std::string> kNoEffectSections{"job", "metrics", "profiling", "checkpoint", "comm", "memory_estimation"};

// One section of the config, read key by key: every key is taken by one of the readers or refused.
class TomlSection {
 public:
  TomlSection(const toml::table& t, std::string name, std::string source)
      : t_(t), name_(std::move(name)), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& rule) const {
    throw InputError(source_ + ": " + name_ + "." + key + ": " + rule);
  }
  bool has(const std::string& key) const { return t_.contains(key); }
  std::optional<int64_t> integer(const std::string& key, int64_t lo, int64_t hi) {
    used_.insert(key);
    const toml::node* n = t_.get(key);
    if (!n) return std::nullopt;
    const auto v = n->value_exact<int64_t>();
    if (!v) fail(key, "must be an integer");
    if (*v < lo || *v > hi) fail(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return *v;
  }
  std::optional<std::string> text(const std::string& key) {
    used_.insert(key);
    const toml::node* n = t_.get(key);
    if (!n) return std::nullopt;
    const auto v = n->value_exact<std::string>();
    if (!v) fail(key, "must be a string");
    return *v;
  }
  // A string, or (torchtitan writes some options either way) an integer given as its decimal text.
  std::optional<std::string> text_or_integer(const std::string& key) {
    used_.insert(key);
    const toml::node* n = t_.get(key);
    if (!n) return std::nullopt;
    if (const auto i = n->value_exact<int64_t>()) return std::to_string(*i);
    return text(key);
  }
  std::optional<bool> flag(const std::string& key) {
    used_.insert(key);
    const toml::node* n = t_.get(key);
    if (!n) return std::nullopt;
    const auto v = n->value_exact<bool>();
    if (!v) fail(key, "must be true or false");
    return *v;
  }
  // A key accepted with no effect on the step (its value is not read).
  void no_effect(std::initializer_list<const char*> keys) {
    for (const char* k : keys) used_.insert(k);
  }
  // A list or string that must be empty (an option stepsim does not model, at its default).
  void must_be_empty(const std::string& key, const std::string& rule) {
    used_.insert(key);
    const toml::node* n = t_.get(key);
    if (!n) return;
    if (const toml::array* a = n->as_array(); a && a->empty()) return;
    if (const auto s = n->value_exact<std::string>(); s && s->empty()) return;
    fail(key, rule);
  }
  void finish() const {
    for (auto&& [k, v] : t_) {
      if (!used_.count(std::string(k.str()))) {
        fail(std::string(k.str()), "unknown key (not an option of torchtitan at 9dec370; docs/USAGE.md lists them)");
      }
    }
  }

 private:
  const toml::table& t_;
  std::string name_, source_;
  std::set<std::string> used_;
};

struct TorchtitanJob {
  YAML::Node model{YAML::NodeType::Map}, parallelism{YAML::NodeType::Map}, training{YAML::NodeType::Map};
  YAML::Node notes{YAML::NodeType::Sequence};
  int64_t local_batch = 8, seq_len = 2048, replicate = 1, shard = -1, tp = 1, pp = 1, cp = 1, microbatches = 0;
  bool float8 = false, compile = false, async_tp = false, fp8_all_gather = false, precompute_scales = false;
  std::string schedule = "1F1B";
};

void read_tt_model(TomlSection s, TorchtitanJob& c) {
  const std::string name = s.text("name").value_or("llama3");
  if (name != "llama3") s.fail("name", "'" + name + "' is not modelled: llama3 (torchtitan's Llama 3)");
  const std::string flavor = s.text("flavor").value_or("debugmodel");
  const auto it = llama3_flavors().find(flavor);
  if (it == llama3_flavors().end()) {
    s.fail("flavor", "'" + flavor + "' is not a llama3 flavor (debugmodel, 8B, 70B, 405B)");
  }
  const std::string norm = s.text("norm_type").value_or("rmsnorm");
  if (norm != "rmsnorm") {
    s.fail("norm_type", "'" + norm + "' is not modelled: rmsnorm (torchtitan's profile is its eager or compiled "
                        "RMSNorm; fused_rmsnorm's Triton kernel and LayerNorm are not)");
  }
  s.no_effect({"tokenizer_path"});
  s.finish();
  const Llama3Flavor& f = it->second;
  YAML::Node& m = c.model;
  m["name"] = "llama3-" + flavor;
  m["num_layers"] = f.layers;
  m["hidden_size"] = f.dim;
  m["num_attention_heads"] = f.heads;
  if (f.kv_heads != f.heads) {
    m["num_query_groups"] = f.kv_heads;
    m["attention"]["type"] = "gqa";
  }
  m["ffn_hidden_size"] = f.ffn();
  m["activation"] = "swiglu";
  m["normalization"] = "rmsnorm";
  m["add_bias_linear"] = false;
  m["hidden_dropout"] = 0.0;
  m["attention_dropout"] = 0.0;
  m["tie_embeddings"] = false;
  m["position_embedding"] = "rope";
  m["vocab_size"] = kLlama3Vocab;
  c.notes.push_back("model: llama3 " + flavor + " (torchtitan's flavor table), vocabulary 128256 (Llama 3's "
                    "tokenizer; model.tokenizer_path is not read)");
}

void read_tt_training(TomlSection s, TorchtitanJob& c) {
  c.local_batch = s.integer("batch_size", 1, 1 << 16).value_or(8);
  c.seq_len = s.integer("seq_len", 1, int64_t{1} << 24).value_or(2048);
  c.replicate = s.integer("data_parallel_replicate_degree", 1, 1 << 20).value_or(1);
  c.shard = s.integer("data_parallel_shard_degree", -1, 1 << 20).value_or(-1);
  if (c.shard == 0) s.fail("data_parallel_shard_degree", "must be -1 (the rest of the GPUs) or at least 1");
  if (c.replicate > 1 && c.shard != 1) {
    s.fail("data_parallel_replicate_degree", "HSDP (replicate > 1 with sharding) is not modelled yet: shard over all "
                                             "data-parallel ranks (replicate 1) or replicate alone (shard 1)");
  }
  c.tp = s.integer("tensor_parallel_degree", 1, 1 << 16).value_or(1);
  c.compile = s.flag("compile").value_or(false);
  if (s.flag("enable_cpu_offload").value_or(false)) s.fail("enable_cpu_offload", "FSDP2's CPU offload is not modelled");
  if (s.flag("deterministic").value_or(false)) {
    s.fail("deterministic", "deterministic algorithms change which kernels run: not modelled");
  }
  if (s.flag("disable_loss_parallel").value_or(false) && c.tp > 1) {
    s.fail("disable_loss_parallel", "the loss over gathered logits under TP is not modelled (loss parallel is)");
  }
  const std::string param = s.text("mixed_precision_param").value_or("bfloat16");
  if (param != "bfloat16") s.fail("mixed_precision_param", "'" + param + "' is not modelled: bfloat16");
  const std::string reduce = s.text("mixed_precision_reduce").value_or("float32");
  if (reduce != "float32" && reduce != "bfloat16") s.fail("mixed_precision_reduce", "must be float32 or bfloat16");
  c.training["grad_reduce_in_fp32"] = reduce == "float32";
  s.no_effect({"warmup_steps", "max_norm", "steps", "dataset", "dataset_path", "seed", "gc_freq"});
  s.finish();
}

void read_tt_experimental(TomlSection s, TorchtitanJob& c) {
  c.cp = s.integer("context_parallel_degree", 1, 1 << 16).value_or(1);
  c.pp = s.integer("pipeline_parallel_degree", 1, 1 << 12).value_or(1);
  c.schedule = s.text("pipeline_parallel_schedule").value_or("1F1B");
  if (c.schedule != "1F1B" && c.schedule != "Interleaved1F1B" && c.schedule != "GPipe") {
    s.fail("pipeline_parallel_schedule", "'" + c.schedule + "' is not modelled: 1F1B, Interleaved1F1B or GPipe");
  }
  c.microbatches = s.integer("pipeline_parallel_microbatches", 1, 1 << 16).value_or(0);
  s.must_be_empty("pipeline_parallel_split_points",
                  "custom split points are not modelled (torchtitan's even split is)");
  s.must_be_empty("pipeline_parallel_schedule_csv", "a schedule from a CSV file is not modelled");
  c.async_tp = s.flag("enable_async_tensor_parallel").value_or(false);
  if (s.flag("enable_compiled_autograd").value_or(false)) {
    s.fail("enable_compiled_autograd", "compiled autograd is not modelled");
  }
  const std::string rotate = s.text("context_parallel_rotate_method").value_or("allgather");
  if (rotate != "allgather") {
    s.fail("context_parallel_rotate_method", "'" + rotate + "' is not modelled: allgather (PyTorch's ring with K/V "
                                             "gathered once per pass, docs/MODEL.md §12b)");
  }
  s.finish();
}

void read_tt_activation_checkpoint(TomlSection s, TorchtitanJob& c) {
  const std::string mode = s.text("mode").value_or("selective");
  if (mode != "none" && mode != "selective" && mode != "full") s.fail("mode", "must be none, selective or full");
  const std::string option = s.text_or_integer("selective_ac_option").value_or("op");
  if (mode == "selective" && option != "op") {
    s.fail("selective_ac_option", "'" + option + "' (every n-th layer) is not modelled under torchtitan: op");
  }
  c.training["recompute"] = mode;
  s.finish();
}

void read_tt_float8(TomlSection s, TorchtitanJob& c) {
  c.float8 = s.flag("enable_float8_linear").value_or(false);
  c.fp8_all_gather = s.flag("enable_fsdp_float8_all_gather").value_or(false);
  c.precompute_scales = s.flag("precompute_float8_dynamic_scale_for_fsdp").value_or(false);
  for (const char* k : {"scaling_type_input", "scaling_type_weight", "scaling_type_grad_output"}) {
    const std::string t = s.text(k).value_or("dynamic");
    if (t != "dynamic") s.fail(k, "'" + t + "' is not modelled: dynamic (torchao's tensorwise dynamic scaling)");
  }
  s.finish();
  if ((c.fp8_all_gather || c.precompute_scales) && !c.float8) {
    s.fail(c.fp8_all_gather ? "enable_fsdp_float8_all_gather" : "precompute_float8_dynamic_scale_for_fsdp",
           "needs float8.enable_float8_linear");
  }
}

void read_tt_optimizer(TomlSection s, TorchtitanJob& c) {
  const std::string name = s.text("name").value_or("AdamW");
  if (name != "AdamW" && name != "Adam") s.fail("name", "'" + name + "' is not modelled: AdamW or Adam");
  if (s.flag("early_step_in_backward").value_or(false)) {
    s.fail("early_step_in_backward", "the optimizer step inside the backward is not modelled");
  }
  if (const auto fused = s.flag("fused")) {
    c.notes.push_back(std::string("optimizer.fused = ") + (*fused ? "true" : "false") +
                      ": the optimizer step is costed as one fused AdamW either way");
  }
  s.no_effect({"lr"});
  s.finish();
}

// The job's parallelism and training keys from what the sections gave.
void assemble_tt_job(TorchtitanJob& c, const std::string& source) {
  YAML::Node& p = c.parallelism;
  YAML::Node& t = c.training;
  c.model["seq_length"] = c.seq_len;
  p["tensor"] = c.tp;
  if (c.tp > 1) p["sequence_parallel"] = true;  // torchtitan's TP plan shards the norms' sequence (SequenceParallel)
  p["pipeline"] = c.pp;
  p["context"] = c.cp;
  if (c.pp > 1) {
    if (c.schedule == "Interleaved1F1B") {
      p["schedule"] = "interleaved-1f1b";
      p["virtual_stages"] = 2;  // torchtitan's generate_split_points: two stages per rank for a multi-stage schedule
    } else {
      p["schedule"] = c.schedule == "GPipe" ? "gpipe" : "1f1b";
    }
  }
  t["framework"] = "torchtitan";
  t["compile"] = c.compile;
  t["precision"] = c.float8 ? "fp8" : "bf16";
  if (c.fp8_all_gather) t["fp8_param_gather"] = true;
  if (c.precompute_scales) {
    c.notes.push_back("float8.precompute_float8_dynamic_scale_for_fsdp: the weights' scales are costed within the "
                      "fp8 all-gather");
  }
  if (c.async_tp) {
    if (!c.compile) throw InputError(source + ": experimental.enable_async_tensor_parallel: needs training.compile "
                                     "(torchtitan refuses async TP without it)");
    c.notes.push_back("experimental.enable_async_tensor_parallel: async TP is not modelled; the TP collectives are "
                      "costed unoverlapped");
  }
  // A pipeline splits the local batch into its micro-batches (default: one per stage).
  const int64_t micro = c.pp > 1 ? (c.microbatches > 0 ? c.microbatches : c.pp) : 1;
  if (c.local_batch % micro != 0) {
    throw InputError(source + ": training.batch_size: " + std::to_string(c.local_batch) + " does not split into " +
                     std::to_string(micro) + " pipeline micro-batches");
  }
  t["micro_batch_size"] = c.local_batch / micro;
  // FSDP2 shards over dp_shard x cp. Under pipeline parallelism torchtitan keeps the parameters gathered and reduces
  // gradients on the last micro-batch only: ZeRO-1's communication (docs/VALIDATION-RULES.md, torchtitan rows).
  if (c.shard != 1 || c.cp > 1) {
    if (c.pp > 1) t["distributed_optimizer"] = true;
    else t["zero_stage"] = 3;
  }
  t[kInputNotesKey] = c.notes;
}

}  // namespace

YAML::Node torchtitan_config_to_job_node(const std::string& toml_text, const std::string& source) {
  if (toml_text.size() > kMaxInputFileBytes) {
    throw InputError(source + ": larger than " + std::to_string(kMaxInputFileBytes >> 20) + " MiB");
  }
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    throw InputError(source + ": line " + std::to_string(e.source().begin.line) + ": " +
                     std::string(e.description()));
  }
  TorchtitanJob c;
  using Reader = std::function<void(TomlSection, TorchtitanJob&)>;
  const std::map<std::string, Reader> readers{{"model", read_tt_model},
                                              {"training", read_tt_training},
                                              {"experimental", read_tt_experimental},
                                              {"activation_checkpoint", read_tt_activation_checkpoint},
                                              {"float8", read_tt_float8},
                                              {"optimizer", read_tt_optimizer}};
  for (auto&& [key, node] : root) {
    const std::string k(key.str());
    const toml::table* t = node.as_table();
    if (!t) throw InputError(source + ": " + k + ": must be a [" + k + "] section");
    if (kNoEffectSections.count(k)) continue;
    const auto r = readers.find(k);
    if (r == readers.end()) {
      throw InputError(source + ": [" + k + "]: unknown section (torchtitan at 9dec370 has job, model, optimizer, "
                       "training, experimental, activation_checkpoint, float8, checkpoint, metrics, profiling, comm, "
                       "memory_estimation)");
    }
  }
  static const toml::table empty;
  for (const auto& [name, read] : readers) {
    const toml::table* t = root[name].as_table();
    read(TomlSection(t ? *t : empty, name, source), c);
  }
  assemble_tt_job(c, source);
  YAML::Node job(YAML::NodeType::Map);
  job["model"] = c.model;
  job["parallelism"] = c.parallelism;
  job["training"] = c.training;
  // What resolve_torchtitan_degrees needs once the cluster is known.
  YAML::Node pending(YAML::NodeType::Map);
  pending["local_batch"] = c.local_batch;
  pending["replicate"] = c.replicate;
  pending["shard"] = c.shard;
  job[kPendingKey] = pending;
  return job;
}

void resolve_torchtitan_degrees(YAML::Node& root, const std::string& source) {
  const YAML::Node h = root[kPendingKey];
  if (!h.IsMap()) return;
  const int64_t local_batch = h["local_batch"].as<int64_t>(), replicate = h["replicate"].as<int64_t>(),
                shard = h["shard"].as<int64_t>();
  root.remove(kPendingKey);
  YAML::Node p = root["parallelism"];
  YAML::Node t = root["training"];
  // A degree as the tree holds it after --set: a positive integer up to 2^20, or the rule naming the key.
  const auto degree = [&](const YAML::Node& v, const std::string& key) {
    return tree_positive_integer(v, key, source, 20);
  };
  if (p["data"]) {  // given by an override (--set parallelism.data=N)
    if (!t["global_batch_size"]) t["global_batch_size"] = local_batch * degree(p["data"], "parallelism.data");
    return;
  }
  const int64_t model_ranks = degree(p["tensor"], "parallelism.tensor") *
                              degree(p["pipeline"], "parallelism.pipeline") *
                              degree(p["context"], "parallelism.context");
  int64_t data = replicate * shard;
  if (shard == -1) {
    const YAML::Node gpus = root["cluster"].IsMap() ? root["cluster"]["num_gpus"] : YAML::Node();
    if (!gpus.IsDefined()) {
      throw InputError(source + ": training.data_parallel_shard_degree: -1 needs the cluster's num_gpus");
    }
    const int64_t n = degree(gpus, "cluster.num_gpus");
    // Each factor is checked against the GPUs first: their product stays far from overflowing.
    if (model_ranks > n || replicate > n || n % (model_ranks * replicate) != 0) {
      throw InputError(source + ": training.data_parallel_shard_degree: -1, but " + std::to_string(n) +
                       " GPUs do not divide into tensor x pipeline x context x replicate = " +
                       std::to_string(model_ranks * replicate));
    }
    data = n / model_ranks;
  }
  p["data"] = data;
  if (!t["global_batch_size"]) t["global_batch_size"] = local_batch * data;
}

}  // namespace stepsim::spec
