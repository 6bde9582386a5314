// Inputs the fuzzers (fuzz/fuzz_job_yaml.cpp, fuzz/fuzz_overrides.cpp) found to crash or hit UB. Each must
// now end in InputError or in a job whose workload builds; the sanitizer suite (make test-sanitize) turns
// a relapse into a failure.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/catalog/catalog.hpp"
#include "test_util.hpp"

namespace stepsim {
namespace {

// The fuzz pipeline: parse, convert and validate, then build the workload (as fuzz_job_yaml does).
void run_job_yaml(const std::string& yaml) {
  const spec::JobSpec job = spec::job_from_node(stepsim::catalog::shipped().gpus, spec::parse_yaml(yaml, "fuzz.yaml"), "fuzz.yaml");
  (void)workload::build_megatron_workload(job);
}

std::string error_of(const std::string& yaml) {
  try {
    run_job_yaml(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

// Issue 48: every fuzz target has a seed corpus and a dictionary (scripts/fuzz-dicts), and each dictionary still holds
// the keys its reader knows: a key added to a reader after the dictionary was written is missing until the script runs.
TEST(FuzzRegressions, EveryTargetHasASeedCorpusAndACurrentDictionary) {
  namespace fs = std::filesystem;
  const fs::path root = test::source_dir();
  int targets = 0;
  for (const auto& e : fs::directory_iterator(root / "fuzz")) {
    const std::string name = e.path().stem().string();
    if (e.path().extension() != ".cpp" || name.rfind("fuzz_", 0) != 0) continue;
    ++targets;
    const fs::path corpus = root / "fuzz" / "corpus" / name.substr(5);
    EXPECT_TRUE(fs::is_directory(corpus) && !fs::is_empty(corpus)) << corpus;
    EXPECT_TRUE(fs::is_regular_file(root / "fuzz" / "dict" / (name + ".dict"))) << name << ": run scripts/fuzz-dicts";
  }
  EXPECT_GE(targets, 18);
  const std::string dict = test::read_file((root / "fuzz/dict/fuzz_job_yaml.dict").string());
  for (const char* key : {"\"num_query_groups\"", "\"context\"", "\"overlap_moe_expert_parallel_comm\"",
                          "\"power_limit_W\"", "\"framework\""}) {
    EXPECT_NE(dict.find(key), std::string::npos) << key << ": run scripts/fuzz-dicts";
  }
  const std::string args = test::read_file((root / "fuzz/dict/fuzz_megatron_args.dict").string());
  EXPECT_NE(args.find("\"--pipeline-model-parallel-size\""), std::string::npos);
}

// validate.cpp: tensor x pipeline x context x data overflowed int64 (each degree may be 2^20).
TEST(FuzzRegressions, ParallelDegreesProductOverflow) {
  const std::string yaml =
      "model: {num_layers: 4, hidden_size: 64, num_attention_heads: 4, ffn_hidden_size: 256, vocab_size: 500,"
      " seq_length: 128}\n"
      "parallelism: {tensor: 1048576, pipeline: 1048576, context: 1048576, data: 1048576}\n"
      "training: {global_batch_size: 16}\n"
      "cluster: {num_gpus: 8}\n";
  EXPECT_NE(error_of(yaml).find("does not equal cluster.num_gpus 8"), std::string::npos) << error_of(yaml);
}

// The workload builder's pipeline exchange size (stage_builder.cpp): beta * tokens (2^40) * hidden (2^24) overflowed int64.
TEST(FuzzRegressions, HugeActivationsRefused) {
  const std::string yaml =
      "model: {num_layers: 1, hidden_size: 16777216, num_attention_heads: 1, ffn_hidden_size: 16777216,"
      " vocab_size: 16777216, seq_length: 16777216}\n"
      "training: {global_batch_size: 65536, micro_batch_size: 65536}\n"
      "cluster: {num_gpus: 1}\n";
  EXPECT_NE(error_of(yaml).find("cannot be simulated"), std::string::npos) << error_of(yaml);
}

// model_dims.cpp layer_params(): num_experts (2^16) x expert parameters (2^49) overflowed int64.
TEST(FuzzRegressions, HugeExpertParametersRefused) {
  const std::string yaml =
      "model: {num_layers: 1, hidden_size: 16777216, num_attention_heads: 1, ffn_hidden_size: 1, vocab_size: 1,"
      " seq_length: 1, moe: {num_experts: 65536, topk: 1, ffn_hidden_size: 16777216}}\n"
      "training: {global_batch_size: 1}\n"
      "cluster: {num_gpus: 1}\n";
  EXPECT_NE(error_of(yaml).find("key model: has about"), std::string::npos) << error_of(yaml);
}

// The workload builder's gemm() (workload/megatron/emitter.cpp): tokens (2^40) x local vocabulary (2^24) of the output layer overflowed int64
// with only 1e9 parameters (refused by the activation bound, not the parameter bound).
TEST(FuzzRegressions, HugeOutputLayerActivationsRefused) {
  const std::string yaml =
      "model: {num_layers: 1, hidden_size: 64, num_attention_heads: 1, ffn_hidden_size: 64, vocab_size: 16777216,"
      " seq_length: 16777216}\n"
      "training: {global_batch_size: 65536, micro_batch_size: 65536}\n"
      "cluster: {num_gpus: 1}\n";
  EXPECT_NE(error_of(yaml).find("activation elements"), std::string::npos) << error_of(yaml);
}

// Large but below the size limit: accepted, and the workload builds without overflow.
TEST(FuzzRegressions, LargeJobBelowLimitBuilds) {
  const std::string yaml =
      "model: {num_layers: 1, hidden_size: 4096, num_attention_heads: 1, ffn_hidden_size: 1, vocab_size: 1,"
      " seq_length: 16777216}\n"
      "training: {global_batch_size: 256, micro_batch_size: 256, precision: fp32}\n"
      "cluster: {num_gpus: 1}\n";
  EXPECT_NO_THROW(run_job_yaml(yaml));
}

}  // namespace
}  // namespace stepsim
