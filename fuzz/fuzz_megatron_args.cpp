// libFuzzer target for megatron_args_to_job_node. InputError is the expected outcome for bad input;
// any other exception, a crash, a hang, or a produced job that breaks the invariants below is a bug.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <yaml-cpp/yaml.h>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/megatron_args.hpp"

#include "fuzz_support.hpp"


namespace {

using fuzz_support::require;
using fuzz_support::in_range;

void check_job(const YAML::Node& j) {
  const YAML::Node m = j["model"], p = j["parallelism"], t = j["training"];
  const int64_t layers = in_range(m, "num_layers", 1);
  const int64_t heads = in_range(m, "num_attention_heads", 1);
  require(heads % in_range(m, "num_query_groups", 1) == 0);
  in_range(m, "hidden_size", 1);
  in_range(m, "kv_channels", 1);
  in_range(m, "ffn_hidden_size", 1);
  in_range(m, "vocab_size", 1);
  in_range(m, "seq_length", 1);
  if (const YAML::Node moe = m["moe"]) {
    require(in_range(moe, "topk", 1) <= in_range(moe, "num_experts", 1));
    in_range(moe, "layer_freq", 1);
    require(in_range(moe, "first_k_dense", 0) < layers);
    require(moe["capacity_factor"].IsNull() || moe["capacity_factor"].as<double>() > 0);
  }
  const int64_t pp = in_range(p, "pipeline", 1);
  const int64_t vs = in_range(p, "virtual_stages", 1);
  require((vs > 1) == (p["schedule"].as<std::string>() == "interleaved-1f1b"));
  if (const YAML::Node list = p["pipeline_layers"]) {
    require(static_cast<int64_t>(list.size()) == pp * vs);
    int64_t sum = 0;
    for (const auto& n : list) {
      require(n.as<int64_t>() >= 1);
      sum += n.as<int64_t>();
    }
    require(sum == layers);
  }
  in_range(t, "micro_batch_size", 1);
  in_range(t, "global_batch_size", 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string args(reinterpret_cast<const char*>(data), size);
  try {
    const YAML::Node j = stepsim::spec::megatron_args_to_job_node(args);
    check_job(j);
    (void)YAML::Dump(j);
  } catch (const stepsim::InputError&) {
  }
  return 0;
}
