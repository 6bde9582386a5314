// libFuzzer target for torchtitan_config_to_job_node and resolve_torchtitan_degrees. InputError is the expected
// outcome for bad input; any other exception, a crash, a hang, or a produced job that breaks the invariants below is
// a bug.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <yaml-cpp/yaml.h>

#include "stepsim/input/torchtitan_toml.hpp"
#include "stepsim/io/input_error.hpp"

#include "fuzz_support.hpp"

namespace {

using fuzz_support::in_range;
using fuzz_support::require;

void check_job(const YAML::Node& j) {
  const YAML::Node m = j["model"], p = j["parallelism"], t = j["training"];
  in_range(m, "num_layers", 1);
  const int64_t heads = in_range(m, "num_attention_heads", 1);
  if (m["num_query_groups"]) require(heads % in_range(m, "num_query_groups", 1) == 0);
  in_range(m, "hidden_size", 1);
  in_range(m, "ffn_hidden_size", 1);
  in_range(m, "seq_length", 1);
  in_range(p, "tensor", 1);
  in_range(p, "pipeline", 1);
  in_range(p, "context", 1);
  const int64_t data = in_range(p, "data", 1);
  require(in_range(t, "global_batch_size", 1) % (in_range(t, "micro_batch_size", 1) * data) == 0);
  require(t["framework"].as<std::string>() == "torchtitan");
  require(!(t["zero_stage"] && t["distributed_optimizer"]));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    YAML::Node j = stepsim::spec::torchtitan_config_to_job_node(text, "fuzz.toml");
    j["cluster"]["num_gpus"] = 4096;
    stepsim::spec::resolve_torchtitan_degrees(j, "fuzz.toml");
    check_job(j);
    (void)YAML::Dump(j);
  } catch (const stepsim::InputError&) {
  }
  return 0;
}
