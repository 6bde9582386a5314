// fp8 as Transformer Engine runs it (issue 13 item 1d, first part): the linear layers' GEMMs in fp8 behind a cast
// kernel per A operand (input forward, output gradient for dgrad; wgrad uses the transposed copies), the output
// layer, router and attention in bf16; recipes change the cast's bytes. Hand-computed bytes.
#include <gtest/gtest.h>

#include <cmath>

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

// Issue 44 item 3: Blackwell's block-scaled recipes as Transformer Engine runs them (docs/MODEL.md "Blackwell's
// block-scaled GEMMs"), by hand for the small GPT on a B200 (1024 tokens, h 1024, ffn 4096, β = 2):
// - MXFP8: no amax pass; rowwise and columnwise e4m3 copies with an e8m0 scale per 32 values:
//   2 + 2 x (1 + 1/32) = 4.0625 bytes per element; the saved wgrad input 1 + 1/32 bytes per element.
// - NVFP4: a per-tensor amax pass, then rowwise and columnwise e2m1 copies with an e4m3 scale per 16 values:
//   2 x 2 + 2 x (0.5 + 1/16) = 5.125 bytes per element; saved 0.5625; weight copies 2 x (0.5 + 1/256) per parameter.
// - Rates: an NVFP4 GEMM at the B200's 9,000 dense FP4 TFLOPS, an MXFP8 one at the fp8 rate x 0.86 / 0.932.
TEST(Fp8, BlockScaledRecipesCastSaveAndRunAsTheirFormats) {
  auto b200_program = [](const std::string& extra) {
    std::string yaml = test::small_gpt_yaml(1, 1, 1, 2, "", extra);
    yaml.replace(yaml.find("H100-SXM"), 8, "B200");
    return workload::build_megatron_workload(test::job_from_yaml(yaml));
  };
  const workload::Workload mx = b200_program(", precision: fp8, fp8_recipe: mxfp8");
  const workload::Workload fp4 = b200_program(", precision: nvfp4");
  const workload::Workload delayed = b200_program(", precision: fp8");
  const int64_t qkv_elements = 1024 * 1024, fc2_elements = 1024 * 4096;
  EXPECT_EQ(find(mx.programs[0], "qkv_proj_fp8_cast", Phase::Forward)->bytes,
            static_cast<uint64_t>(std::llround(4.0625 * qkv_elements)));
  EXPECT_EQ(find(fp4.programs[0], "qkv_proj_fp8_cast", Phase::Forward)->bytes,
            static_cast<uint64_t>(std::llround(5.125 * qkv_elements)));
  EXPECT_EQ(find(fp4.programs[0], "fc1_dgrad_fp8_cast", Phase::Backward)->bytes,
            static_cast<uint64_t>(std::llround(5.125 * fc2_elements)));
  EXPECT_EQ(find(fp4.programs[0], "output_layer_fp8_cast", Phase::Forward), nullptr);
  // fc2's input (tokens x ffn) saved for its wgrad: 1 byte under delayed scaling, 0.5625 under NVFP4.
  const Op* fc2_fp4 = find(fp4.programs[0], "fc2", Phase::Forward);
  const Op* fc2_fp8 = find(delayed.programs[0], "fc2", Phase::Forward);
  ASSERT_NE(fc2_fp4, nullptr);
  ASSERT_NE(fc2_fp8, nullptr);
  EXPECT_EQ(fc2_fp8->mem_alloc_at_start - fc2_fp4->mem_alloc_at_start,
            fc2_elements - static_cast<int64_t>(std::llround(0.5625 * fc2_elements)));
  const workload::ModelDims d = workload::make_dims(fp4.job);
  const Program& p = fp4.programs[0];
  const int64_t linear = p.dense_parameters + p.expert_parameters - d.params_embedding - d.params_output;
  EXPECT_EQ(p.static_memory.fp8_weight_cache,
            static_cast<int64_t>(static_cast<double>(linear) * 2 * (0.5 + 1.0 / 256)));
  // The GEMM rates: an 8192^3 GEMM is compute-bound, so its time scales as 1 / (peak x scale).
  const hw::GpuSpec& b200 = stepsim::catalog::shipped().gpus.find("B200");
  EXPECT_DOUBLE_EQ(b200.peak_flops(spec::Precision::Nvfp4), 9000e12);
  Op g;
  g.category = workload::ComputeCategory::Gemm;
  g.gemm_m = g.gemm_n = g.gemm_k = 8192;
  g.flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  const cost::EfficiencyTable table = stepsim::catalog::shipped().efficiency.resolve(b200);
  EXPECT_DOUBLE_EQ(table.gemm_precision_scale[cost::kMxfp8GemmScale], 0.86);
  const auto t_fp8 = cost::make_roofline_model(b200, spec::Precision::Fp8, table)->duration_ns(g);
  const auto t_fp4 = cost::make_roofline_model(b200, spec::Precision::Nvfp4, table)->duration_ns(g);
  // 9,000 vs 4,500 TFLOPS, plus each kernel's fixed launch gap and wave overheads.
  EXPECT_NEAR(static_cast<double>(t_fp4) / static_cast<double>(t_fp8), 0.5, 0.03);
  // The job's own compute model (sim::make_compute_model) takes the mxfp8 rate for an mxfp8 job's fp8 GEMMs.
  auto model_of = [](const std::string& extra) {
    std::string y = test::small_gpt_yaml(1, 1, 1, 2, "", extra);
    y.replace(y.find("H100-SXM"), 8, "B200");
    return sim::make_compute_model(stepsim::catalog::shipped(), test::job_from_yaml(y));
  };
  const double t_mx = static_cast<double>(model_of(", precision: fp8, fp8_recipe: mxfp8")->duration_ns(g));
  const double t_cs = static_cast<double>(model_of(", precision: fp8, fp8_recipe: current")->duration_ns(g));
  EXPECT_NEAR(t_mx / t_cs, 0.932 / 0.86, 0.03);
  // nvfp4 needs FP4 tensor cores, and is refused where it is not modelled.
  auto error = [](const std::string& extra, const std::string& gpu) {
    std::string yaml = test::small_gpt_yaml(1, 1, 1, 2, "", extra);
    yaml.replace(yaml.find("H100-SXM"), 8, gpu);
    return test::job_error(yaml);
  };
  EXPECT_NE(error(", precision: nvfp4", "H100-SXM").find("nvfp4 needs FP4 tensor cores"), std::string::npos);
  EXPECT_NE(error(", precision: nvfp4, fp8_param_gather: true", "B200").find("fp4-param-gather"), std::string::npos);
  EXPECT_EQ(error(", precision: nvfp4, fp8_bf16_last_layers: 2", "B200"), "");
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
