// A file of another tool given where a job is expected, and a mistyped Megatron flag (issue 47 item 3): the error
// names what the file is and the option that reads it, or the flag meant.
#include <string>

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace stepsim {
namespace {

void expect_refusal(const std::string& args, const std::string& says) {
  const test::CliResult r = test::run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(says), std::string::npos) << args << "\n" << r.output;
}

TEST(InputKinds, AnotherToolsFileIsNamedWithItsOption) {
  const std::string ex = test::source_dir() + "/examples/";
  expect_refusal("simulate " + ex + "deepspeed/llama-2-7b-config.json",
                 "llama-2-7b-config.json: a Hugging Face config.json, not a job: name it in a job file (model: "
                 "{hf_config: ");
  expect_refusal("simulate " + ex + "deepspeed/llama2-7b-zero3.json",
                 "llama2-7b-zero3.json: a DeepSpeed config, not a job: give it as --deepspeed-config ");
  expect_refusal("plan " + ex + "torchtitan/llama3-8b-float8.toml",
                 "llama3-8b-float8.toml: a TOML file, not a job (YAML): a torchtitan config is read with "
                 "--torchtitan-config ");
}

TEST(InputKinds, AMistypedMegatronFlagGetsTheNearestOne) {
  const std::string cluster = test::source_dir() + "/examples/clusters/h800-96.yaml";
  expect_refusal("simulate --cluster " + cluster + " --megatron-args \"--num-layer 4\"",
                 "unknown argument --num-layer (did you mean --num-layers?)");
  expect_refusal("simulate --cluster " + cluster + " --megatron-args \"--num-layers 4 --sequence-paralel\"",
                 "unknown argument --sequence-paralel (did you mean --sequence-parallel?)");
  // Nothing near: no guess.
  expect_refusal("simulate --cluster " + cluster + " --megatron-args \"--frobnicate-everything 1\"",
                 "unknown argument --frobnicate-everything\n");
}

}  // namespace
}  // namespace stepsim
