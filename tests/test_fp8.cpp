// fp8 as Transformer Engine runs it (issue 13 item 1d, first part): the linear layers' GEMMs in fp8 behind a cast
// kernel per A operand (input forward, output gradient for dgrad; wgrad uses the transposed copies), the output
// layer, router and attention in bf16; recipes change the cast's bytes. Hand-computed bytes.
#include <gtest/gtest.h>

#include "stepsim/cost/compute/compute_model.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/assemble/simulation.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/workload/megatron_builder.hpp"
#include "stepsim/workload/model_dims.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

using workload::Op;
using workload::Phase;
using workload::Program;

const Op* find(const Program& p, const std::string& name, Phase phase) {
  for (const Op& op : p.ops) {
    if (p.name(op) == name && op.phase == phase) return &op;
  }
  return nullptr;
}

Program program(const std::string& training_extra) {
  // TP 1, micro-batch 1, seq 1024, h 1024, ffn 4096: 1024 tokens.
  const spec::JobSpec job = test::job_from_yaml(test::small_gpt_yaml(1, 1, 1, 2, "", ", precision: fp8" + training_extra));
  return workload::build_megatron_workload(job).programs[0];
}

TEST(Fp8, CastBeforeEachLinearGemmNotBeforeWgradOrBf16Gemms) {
  const Program p = program("");
  // Delayed scaling: read 2 bytes, write fp8 and its transpose, per element of the A operand.
  const Op* qkv = find(p, "qkv_proj_fp8_cast", Phase::Forward);
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->bytes, 4u * 1024 * 1024);  // tokens x h
  const Op* fc2 = find(p, "fc2_fp8_cast", Phase::Forward);
  ASSERT_NE(fc2, nullptr);
  EXPECT_EQ(fc2->bytes, 4u * 1024 * 4096);  // tokens x ffn
  const Op* fc1_dgrad = find(p, "fc1_dgrad_fp8_cast", Phase::Backward);
  ASSERT_NE(fc1_dgrad, nullptr);
  EXPECT_EQ(fc1_dgrad->bytes, 4u * 1024 * 4096);  // the output gradient, tokens x ffn
  EXPECT_EQ(find(p, "fc1_wgrad_fp8_cast", Phase::Backward), nullptr);
  EXPECT_EQ(find(p, "output_layer_fp8_cast", Phase::Forward), nullptr);
  EXPECT_TRUE(find(p, "output_layer", Phase::Forward)->keep_bf16);
  EXPECT_FALSE(find(p, "fc1", Phase::Forward)->keep_bf16);
}

TEST(Fp8, CurrentScalingReadsOnceMore) {
  EXPECT_EQ(find(program(", fp8_recipe: current"), "qkv_proj_fp8_cast", Phase::Forward)->bytes, 6u * 1024 * 1024);
  EXPECT_EQ(find(program(", fp8_recipe: blockwise"), "qkv_proj_fp8_cast", Phase::Forward)->bytes, 4u * 1024 * 1024);
}

TEST(Fp8, Bf16GemmsInAnFp8JobRunAtTheBf16Rate) {
  const hw::GpuSpec& h100 = stepsim::catalog::shipped().gpus.find("H100-SXM");
  Op g;
  g.category = workload::ComputeCategory::Gemm;
  g.gemm_m = g.gemm_n = g.gemm_k = 8192;
  g.flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  g.bytes = 2ull * 3 * 8192 * 8192;
  const auto fp8 = cost::make_roofline_model(h100, spec::Precision::Fp8, stepsim::catalog::shipped().efficiency.resolve(h100));
  const auto bf16 = cost::make_roofline_model(h100, spec::Precision::Bf16, stepsim::catalog::shipped().efficiency.resolve(h100));
  EXPECT_LT(fp8->duration_ns(g), bf16->duration_ns(g));
  g.keep_bf16 = true;
  EXPECT_EQ(fp8->duration_ns(g), bf16->duration_ns(g));
}

TEST(Fp8, RecipeKeysNeedFp8AndMxfp8NeedsBlackwell) {
  auto error = [](const std::string& extra, const std::string& gpu = "H100-SXM") {
    std::string yaml = test::small_gpt_yaml(1, 1, 1, 2, "", extra);
    yaml.replace(yaml.find("H100-SXM"), 8, gpu);
    try {
      test::job_from_yaml(yaml);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(", fp8_param_gather: true").find("training.fp8_param_gather: needs training.precision: fp8"),
            std::string::npos);
  EXPECT_NE(error(", precision: fp8, fp8_recipe: mxfp8").find("mxfp8 needs a Blackwell GPU"), std::string::npos);
  EXPECT_EQ(error(", precision: fp8, fp8_recipe: mxfp8", "B200"), "no error");
}

// Issue 13 item 5 (fp8 weight caches): Transformer Engine keeps an fp8 copy of each linear layer's weight and of its
// transpose for the whole step, 1 byte each per parameter, none for the bf16 word embeddings and output layer;
// with fp8_param_gather the parameter is the fp8 copy and only the transpose is extra; mxfp8 adds a 1-byte scale
// per 32 values to each copy. bf16 jobs have none.
TEST(Fp8, WeightCopiesInStaticMemory) {
  auto copies = [](const std::string& extra, const std::string& gpu = "H100-SXM") {
    std::string yaml = test::small_gpt_yaml(1, 1, 1, 2, "", extra);
    yaml.replace(yaml.find("H100-SXM"), 8, gpu);
    const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
    const Program& p = w.programs[0];
    const workload::ModelDims d = workload::make_dims(w.job);
    const int64_t linear = p.dense_parameters + p.expert_parameters - d.params_embedding - d.params_output;
    return std::make_pair(p.static_memory.fp8_weight_cache, linear);
  };
  const auto [delayed, linear] = copies(", precision: fp8");
  EXPECT_GT(linear, 0);
  EXPECT_EQ(delayed, 2 * linear);
  EXPECT_EQ(copies(", precision: fp8, fp8_param_gather: true").first, linear);
  EXPECT_EQ(copies(", precision: fp8, fp8_recipe: mxfp8", "B200").first,
            static_cast<int64_t>(static_cast<double>(linear) * 2 * (1 + 1.0 / 32)));
  EXPECT_EQ(copies(", precision: bf16").first, 0);
  // `stepsim memory` shows them in their own column and JSON key.
  const std::string path = test::write_temp("fp8mem.yaml", test::small_gpt_yaml(1, 1, 1, 2, "", ", precision: fp8"));
  const auto r = test::run_cli("memory " + path);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("fp8 copies"), std::string::npos) << r.output;
}

// Megatron's --first-last-layers-bf16 (num_layers_at_start/end_in_bf16) and --no-fp8-wgrad: the small GPT has 8 layers;
// layers 0 and 7 in bf16 have no casts and bf16 GEMMs, their parameters no fp8 copies; wgrad in bf16 everywhere.
TEST(Fp8, FirstAndLastLayersInBf16AndBf16Wgrad) {
  const std::string yaml = test::small_gpt_yaml(1, 1, 1, 2, "", ", precision: fp8, fp8_bf16_first_layers: 1, "
                                                                "fp8_bf16_last_layers: 1, fp8_wgrad: false");
  const workload::Workload w = workload::build_megatron_workload(test::job_from_yaml(yaml));
  const Program& p = w.programs[0];
  int casts[8] = {}, bf16_fc1[8] = {};
  for (const Op& op : p.ops) {
    if (op.layer < 0 || op.layer >= 8 || op.microbatch != 0) continue;
    const std::string n = p.name(op);
    if (n.size() > 9 && n.compare(n.size() - 9, 9, "_fp8_cast") == 0) ++casts[op.layer];
    if (n == "fc1" && op.phase == Phase::Forward && op.keep_bf16) ++bf16_fc1[op.layer];
    if (n == "fc1_wgrad") {
      EXPECT_TRUE(op.keep_bf16) << "layer " << op.layer;
    }
  }
  for (int l = 0; l < 8; ++l) {
    const bool bf16 = l == 0 || l == 7;
    EXPECT_EQ(casts[l] == 0, bf16) << "layer " << l;
    EXPECT_EQ(bf16_fc1[l], bf16 ? 1 : 0) << "layer " << l;
  }
  const workload::ModelDims d = workload::make_dims(w.job);
  const int64_t linear = p.dense_parameters - d.params_embedding - d.params_output;
  EXPECT_EQ(p.bf16_layer_parameters, 2 * d.layer_params_dense(false));  // two of eight equal layers
  EXPECT_EQ(p.static_memory.fp8_weight_cache, 2 * (linear - p.bf16_layer_parameters));
  // Both cost time: bf16 GEMMs run at half the fp8 rate.
  const auto step = [](const std::string& extra) {
    return sim::run_simulation(stepsim::catalog::shipped(), test::job_from_yaml(test::small_gpt_yaml(1, 1, 1, 2, "", ", precision: fp8" + extra)), {0})
        .result.step_ns;
  };
  const int64_t all_fp8 = step(""), ends_bf16 = step(", fp8_bf16_first_layers: 1, fp8_bf16_last_layers: 1");
  EXPECT_GT(ends_bf16, all_fp8);
  EXPECT_GT(step(", fp8_wgrad: false"), all_fp8);
  EXPECT_NE(test::job_error(test::small_gpt_yaml(1, 1, 1, 2, "", ", fp8_wgrad: false")).find("training.fp8_wgrad: needs "
                                                                                              "training.precision: fp8"),
            std::string::npos);
  EXPECT_NE(test::job_error(test::small_gpt_yaml(1, 1, 1, 2, "", ", precision: fp8, fp8_bf16_first_layers: 5, "
                                                                 "fp8_bf16_last_layers: 4"))
                .find("exceed model.num_layers (8)"),
            std::string::npos);
}

}  // namespace
}  // namespace stepsim
