#include "stepsim/input/foreign_spellings.hpp"

#include <string_view>
#include <unordered_map>

#include "stepsim/io/input_error.hpp"
#include "stepsim/io/printable.hpp"

namespace stepsim::spec {
namespace {

struct ForeignKey {
  std::string_view section, key;  // as written: section.key
  std::string_view ours;          // stepsim's key, or what to write instead
  std::string_view why;           // where the spelling comes from, or what it means here
};

// Only keys stepsim does not read: each entry is an unknown key anyway, so this changes no accepted file.
constexpr ForeignKey kForeignKeys[] = {
    {"model", "num_kv_heads", "model.num_query_groups", "the key/value heads of grouped-query attention"},
    {"model", "num_key_value_heads", "model.num_query_groups", "Hugging Face's name for the key/value heads"},
    {"model", "n_kv_heads", "model.num_query_groups", "torchtitan's name for the key/value heads"},
    {"model", "n_heads", "model.num_attention_heads", "torchtitan's name"},
    {"model", "num_heads", "model.num_attention_heads", ""},
    {"model", "n_layers", "model.num_layers", "torchtitan's name"},
    {"model", "num_hidden_layers", "model.num_layers", "Hugging Face's name"},
    {"model", "dim", "model.hidden_size", "torchtitan's name"},
    {"model", "d_model", "model.hidden_size", ""},
    {"model", "intermediate_size", "model.ffn_hidden_size", "Hugging Face's name"},
    {"model", "max_position_embeddings", "model.seq_length",
     "the sequence a step trains on; Hugging Face's is the longest the model supports"},
    {"model", "seq_len", "model.seq_length", "torchtitan's name"},
    {"model", "max_seq_len", "model.seq_length", ""},
    {"model", "num_experts", "model.moe.num_experts", "MoE settings live under model.moe"},
    {"parallelism", "tp", "parallelism.tensor", ""},
    {"parallelism", "pp", "parallelism.pipeline", ""},
    {"parallelism", "cp", "parallelism.context", ""},
    {"parallelism", "ep", "parallelism.expert", ""},
    {"parallelism", "dp", "parallelism.data", "or leave it out: it is what the GPUs leave"},
    {"parallelism", "tensor_model_parallel_size", "parallelism.tensor", "Megatron-LM's name"},
    {"parallelism", "pipeline_model_parallel_size", "parallelism.pipeline", "Megatron-LM's name"},
    {"parallelism", "context_parallel_size", "parallelism.context", "Megatron-LM's name"},
    {"parallelism", "expert_model_parallel_size", "parallelism.expert", "Megatron-LM's name"},
    {"parallelism", "data_parallel_shard_degree", "parallelism.data",
     "with training.zero_stage: 3 for torchtitan's FSDP"},
    {"parallelism", "virtual_pipeline_model_parallel_size", "parallelism.virtual_stages", "Megatron-LM's name"},
    {"training", "zero", "training.zero_stage", "0-3"},
    {"training", "fsdp", "training.zero_stage: 3", "FSDP's full sharding is ZeRO-3"},
    {"training", "zero_optimization", "training.zero_stage",
     "DeepSpeed's section; or give its JSON as --deepspeed-config"},
    {"training", "micro_batch", "training.micro_batch_size", ""},
    {"training", "train_micro_batch_size_per_gpu", "training.micro_batch_size", "DeepSpeed's name"},
    {"training", "train_batch_size", "training.global_batch_size", "DeepSpeed's name"},
    {"training", "global_batch", "training.global_batch_size", ""},
    {"training", "gradient_checkpointing", "training.recompute", "full or selective"},
    {"training", "activation_checkpointing", "training.recompute", "full or selective"},
    {"training", "dtype", "training.precision", ""},
    {"training", "mixed_precision", "training.precision", ""},
    {"model", "precision", "training.precision", "the precision is the training's"},
    {"model", "dtype", "training.precision", ""},
    {"model", "torch_dtype", "training.precision", "Hugging Face's name; the precision is the training's"},
    {"cluster", "gpus", "cluster.num_gpus", "how many; which GPU is cluster.gpu"},
    {"cluster", "gpu_type", "cluster.gpu", ""},
    {"cluster", "num_nodes", "cluster.num_gpus", "nodes x cluster.gpus_per_node"},
    {"cluster", "nodes", "cluster.num_gpus", "nodes x cluster.gpus_per_node"},
};

// A section's key written at the top of the job, outside its section: the key and where it belongs.
constexpr std::pair<std::string_view, std::string_view> kSectionKeys[] = {
    {"num_layers", "model.num_layers"},
    {"hidden_size", "model.hidden_size"},
    {"num_attention_heads", "model.num_attention_heads"},
    {"num_query_groups", "model.num_query_groups"},
    {"num_key_value_heads", "model.num_query_groups"},
    {"ffn_hidden_size", "model.ffn_hidden_size"},
    {"seq_length", "model.seq_length"},
    {"vocab_size", "model.vocab_size"},
    {"tensor", "parallelism.tensor"},
    {"pipeline", "parallelism.pipeline"},
    {"data", "parallelism.data"},
    {"context", "parallelism.context"},
    {"expert", "parallelism.expert"},
    {"micro_batch_size", "training.micro_batch_size"},
    {"global_batch_size", "training.global_batch_size"},
    {"precision", "training.precision"},
    {"recompute", "training.recompute"},
    {"zero_stage", "training.zero_stage"},
    {"framework", "training.framework"},
    {"gpu", "cluster.gpu"},
    {"num_gpus", "cluster.num_gpus"},
    {"gpus_per_node", "cluster.gpus_per_node"},
};

struct ForeignValue {
  std::string_view written, ours;
};

// training.precision as PyTorch, Hugging Face and Lightning write it.
constexpr ForeignValue kForeignPrecisions[] = {
    {"bfloat16", "bf16"}, {"bf16-mixed", "bf16"}, {"float16", "fp16"}, {"half", "fp16"}, {"16-mixed", "fp16"},
    {"float32", "fp32"}, {"float", "fp32"},       {"float8", "fp8"},   {"float8_e4m3fn", "fp8"},
};

// kForeignKeys by key as written: a refused job's every key is looked up (a fuzzer refuses most of what it writes).
const std::unordered_multimap<std::string_view, const ForeignKey*>& foreign_keys_by_key() {
  static const std::unordered_multimap<std::string_view, const ForeignKey*> index = [] {
    std::unordered_multimap<std::string_view, const ForeignKey*> m;
    for (const ForeignKey& f : kForeignKeys) m.emplace(f.key, &f);
    return m;
  }();
  return index;
}

// An absent key is an invalid node, on which anything but IsDefined throws.
bool is_map(const YAML::Node& n) { return n.IsDefined() && n.IsMap(); }
std::string_view text(const YAML::Node& n) {
  return n.IsDefined() && n.IsScalar() ? std::string_view(n.Scalar()) : std::string_view();
}

}  // namespace

void refuse_foreign_spellings(const YAML::Node& root, const std::string& source, const std::string& cluster_source) {
  if (!is_map(root)) return;
  // The keys as written, each looked up in the tables (the tables looked up in the file would ask yaml-cpp, which
  // compares with every key of a mapping, a hundred times).
  for (const auto& sec : root) {  // each entry dereferenced once: yaml-cpp builds a pair of nodes every time
    if (!sec.first.IsScalar() || !is_map(sec.second)) continue;
    const std::string& section = sec.first.Scalar();
    for (const auto& entry : sec.second) {
      if (!entry.first.IsScalar()) continue;
      const std::string& key = entry.first.Scalar();
      const auto [from, to] = foreign_keys_by_key().equal_range(key);
      for (auto it = from; it != to; ++it) {
        const ForeignKey& f = *it->second;
        if (f.section != section) continue;
        const std::string& file = f.section == "cluster" ? cluster_source : source;
        throw InputError(file + ": unknown key " + section + "." + key + " (did you mean " + std::string(f.ours) + "?" +
                         (f.why.empty() ? "" : " " + std::string(f.why)) + ")");
      }
    }
  }
  for (const auto& top : root) {
    if (!top.first.IsScalar()) continue;
    for (const auto& [key, ours] : kSectionKeys) {
      if (top.first.Scalar() != key) continue;
      const std::string_view section = ours.substr(0, ours.find('.'));
      throw InputError(source + ": unknown key " + std::string(key) + " (did you mean " + std::string(ours) +
                       "? it belongs in the " + std::string(section) + " section)");
    }
  }
  const YAML::Node training = root["training"];
  if (!is_map(training)) return;
  const std::string_view precision = text(training["precision"]);
  for (const ForeignValue& v : kForeignPrecisions) {
    if (precision != v.written) continue;
    throw InputError(source + ": key training.precision: must be one of fp32 | fp16 | bf16 | fp8 | nvfp4, got '" +
                     printable(std::string(precision)) + "' (did you mean " + std::string(v.ours) + "?)");
  }
}

}  // namespace stepsim::spec
