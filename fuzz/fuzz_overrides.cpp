// libFuzzer target for `--set key=value` overrides: each input line is one override, applied with
// apply_overrides to a fixed valid job tree, which job_from_node then converts and validates. The first 16 lines are
// applied (a command line gives a handful; more lines only repeat what each does, and the conversion runs once per
// input whatever their number). InputError is the expected outcome for bad input; any other exception, a crash, UB
// or a hang is a bug.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"

#include "fuzz_support.hpp"
#include "stepsim/catalog/catalog.hpp"


namespace {

// The smallest valid job (the keys without a default) for the overrides to edit. Each input copies and converts it
// whole, so each key here costs every execution; the richer jobs (MoE, the parallel degrees, links) are seeds that
// set them (fuzz/corpus/overrides/rich-job.txt) and what the fuzzer derives from them.
constexpr const char* kJob = R"(model:
  num_layers: 4
  hidden_size: 256
  num_attention_heads: 8
  vocab_size: 1000
  seq_length: 512
  ffn_hidden_size: 1024
training:
  global_batch_size: 16
cluster:
  gpu: H100-SXM
  num_gpus: 8
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  for (size_t b = 0; b <= text.size();) {
    size_t e = text.find('\n', b);
    if (e == std::string::npos) e = text.size();
    if (e > b) overrides.push_back(text.substr(b, e - b));  // skip blank lines (e.g. a trailing newline)
    if (overrides.size() == 16) break;
    b = e + 1;
  }
  try {
    static const YAML::Node base = stepsim::spec::parse_yaml(kJob, "fuzz.yaml");
    YAML::Node root = YAML::Clone(base);  // a fresh copy each run: overrides edit the tree in place
    stepsim::spec::apply_overrides(root, overrides);
    (void)stepsim::spec::job_from_node(stepsim::catalog::shipped().gpus, root, "fuzz.yaml");
  } catch (const stepsim::InputError&) {
  }
  return 0;
}
