// GPU catalog: data/gpus.yaml content (datasheet numbers), name matching, strict loading.
#include <gtest/gtest.h>

#include "test_util.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace {

using stepsim::InputError;
using stepsim::hw::GpuCatalog;
using stepsim::hw::GpuSpec;
using stepsim::spec::Precision;

constexpr double kT = 1e12;
constexpr double kGiB = 1073741824.0;

// Writes `text` to a fresh file under the test temp dir and returns its path.
std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::path(stepsim::test::temp_dir()) / "stepsim_gpu_catalog";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

// A valid one-GPU catalog; tests replace one line to break it.
std::string one_gpu(const std::string& replace_from = "", const std::string& replace_to = "") {
  std::string s =
      "gpus:\n"
      "  - name: TEST-GPU\n"
      "    aliases: [tg]\n"
      "    arch: hopper\n"
      "    sm_count: 100\n"
      "    fp32_tflops: 50\n"
      "    tf32_tflops: 400\n"
      "    fp16_tflops: 800\n"
      "    bf16_tflops: 800\n"
      "    fp8_tflops: 0\n"
      "    hbm_bandwidth_GBps: 3000\n"
      "    memory_GiB: 64\n"
      "    nvswitch: true\n"
      "    intra_node_GBps: 450\n"
      "    source: unit test\n";
  if (!replace_from.empty()) {
    const auto pos = s.find(replace_from);
    EXPECT_NE(pos, std::string::npos) << replace_from;
    s.replace(pos, replace_from.size(), replace_to);
  }
  return s;
}

// Expects load() to throw an InputError whose message contains every fragment.
void expect_load_error(const std::string& file, const std::string& text, std::initializer_list<std::string> parts) {
  const std::string path = write_temp(file, text);
  try {
    GpuCatalog::load(path);
    FAIL() << "no error for " << file;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message must be one line: " << msg;
  }
}

TEST(GpuCatalog, BuiltinHoldsTheRequiredGpus) {
  const auto& cat = stepsim::catalog::shipped().gpus;
  for (const char* name : {"A100-40GB", "A100-80GB", "A800", "H100-SXM", "H800", "H200", "B200", "A40", "RTX-3090",
                           "V100-SXM2-32GB", "L40S"}) {
    EXPECT_NO_THROW(cat.find(name)) << name;
  }
  EXPECT_EQ(cat.gpus().front().name, "A100-40GB");
}

// Dense figures = half the datasheet "with sparsity" tensor numbers.
TEST(GpuCatalog, H100SxmDatasheetFigures) {
  const GpuSpec& g = stepsim::catalog::shipped().gpus.find("H100-SXM");
  EXPECT_EQ(g.arch, stepsim::hw::GpuArch::Hopper);
  EXPECT_EQ(g.sm_count, 132);
  EXPECT_DOUBLE_EQ(g.fp32_flops, 67 * kT);
  EXPECT_DOUBLE_EQ(g.tf32_flops, 989.0 / 2 * kT);
  EXPECT_DOUBLE_EQ(g.bf16_flops, 1979.0 / 2 * kT);
  EXPECT_DOUBLE_EQ(g.fp16_flops, 1979.0 / 2 * kT);
  EXPECT_DOUBLE_EQ(g.fp8_flops, 3958.0 / 2 * kT);
  EXPECT_DOUBLE_EQ(g.hbm_bandwidth_Bps, 3.35e12);
  EXPECT_EQ(g.memory_bytes, static_cast<uint64_t>(80 * kGiB));
  EXPECT_TRUE(g.nvswitch);
  EXPECT_FALSE(g.source.empty());
}

TEST(GpuCatalog, AmpereAndOthersDatasheetFigures) {
  const auto& cat = stepsim::catalog::shipped().gpus;
  const GpuSpec& a80 = cat.find("A100-80GB");
  EXPECT_DOUBLE_EQ(a80.bf16_flops, 312 * kT);
  EXPECT_DOUBLE_EQ(a80.tf32_flops, 156 * kT);
  EXPECT_DOUBLE_EQ(a80.fp8_flops, 0);
  EXPECT_DOUBLE_EQ(a80.hbm_bandwidth_Bps, 2039e9);
  EXPECT_EQ(a80.memory_bytes, 81920ull * 1024 * 1024);  // nvidia-smi: 81920 MiB
  EXPECT_DOUBLE_EQ(cat.find("A100-40GB").hbm_bandwidth_Bps, 1555e9);
  EXPECT_EQ(cat.find("A100-40GB").memory_bytes, 40960ull * 1024 * 1024);
  EXPECT_DOUBLE_EQ(cat.find("H200").hbm_bandwidth_Bps, 4.8e12);
  EXPECT_DOUBLE_EQ(cat.find("H200").bf16_flops, cat.find("H100-SXM").bf16_flops);
  EXPECT_DOUBLE_EQ(cat.find("B200").bf16_flops, 2250 * kT);
  EXPECT_DOUBLE_EQ(cat.find("B200").fp8_flops, 4500 * kT);
  EXPECT_DOUBLE_EQ(cat.find("RTX-3090").bf16_flops, 71 * kT);  // FP32-accumulate rate
  EXPECT_FALSE(cat.find("RTX-3090").nvswitch);
  EXPECT_DOUBLE_EQ(cat.find("V100-SXM2-32GB").bf16_flops, 0);
  EXPECT_DOUBLE_EQ(cat.find("L40S").fp8_flops, 733 * kT);
  // NVLink per direction = half the datasheet's bidirectional figure; PCIe Gen4 x16 where a GPU has no NVLink.
  EXPECT_DOUBLE_EQ(a80.intra_node_GBps, 300);     // 600 GB/s NVLink3
  EXPECT_DOUBLE_EQ(cat.find("H800").intra_node_GBps, 200);  // 400 GB/s
  EXPECT_DOUBLE_EQ(cat.find("B200").intra_node_GBps, 900);  // 1.8 TB/s NVLink5
  EXPECT_DOUBLE_EQ(cat.find("L40S").intra_node_GBps, 32);   // PCIe Gen4 x16
}

// A job without cluster.intra_node gets its GPU's link, not the H100's (an A100 node used to be given 450 GB/s).
TEST(GpuCatalog, IntraNodeLinkDefaultsToTheGpusOwn) {
  auto intra = [](const std::string& gpu, const std::string& extra) {
    return stepsim::test::job_from_yaml("model: {name: g, num_layers: 2, hidden_size: 256, num_attention_heads: 8, "
                               "ffn_hidden_size: 1024, vocab_size: 1000, seq_length: 128}\n"
                               "parallelism: {tensor: 8}\n"
                               "training: {micro_batch_size: 1, global_batch_size: 1}\n"
                               "cluster: {gpu: " + gpu + ", num_gpus: 8" + extra + "}\n")
        .cluster.intra_node.bandwidth_GBps;
  };
  EXPECT_DOUBLE_EQ(intra("A100-80GB", ""), 300);
  EXPECT_DOUBLE_EQ(intra("H100-SXM", ""), 450);
  EXPECT_DOUBLE_EQ(intra("B200", ""), 900);
  EXPECT_DOUBLE_EQ(intra("A100-80GB", ", intra_node: {bandwidth_GBps: 250}"), 250);
}

TEST(GpuCatalog, EveryEntryIsConsistent) {
  for (const GpuSpec& g : stepsim::catalog::shipped().gpus.gpus()) {
    SCOPED_TRACE(g.name);
    EXPECT_GT(g.sm_count, 0);
    EXPECT_GT(g.fp32_flops, 0);
    EXPECT_GT(g.fp16_flops, g.fp32_flops);  // tensor cores beat CUDA cores
    if (g.tf32_flops > 0) {
      EXPECT_LE(g.tf32_flops, g.fp16_flops);
    }
    if (g.bf16_flops > 0) {
      EXPECT_DOUBLE_EQ(g.bf16_flops, g.fp16_flops);
    }
    if (g.fp8_flops > 0) {
      EXPECT_GE(g.fp8_flops, g.bf16_flops);
    }
    EXPECT_GT(g.hbm_bandwidth_Bps, 1e11);
    EXPECT_GT(g.memory_bytes, 16ull << 30);
    EXPECT_FALSE(g.source.empty());
  }
}

TEST(GpuCatalog, NamesMatchIgnoringCaseAndSeparatorsAndAliases) {
  const auto& cat = stepsim::catalog::shipped().gpus;
  EXPECT_EQ(cat.find("h100-sxm").name, "H100-SXM");
  EXPECT_EQ(cat.find("H100_SXM").name, "H100-SXM");
  EXPECT_EQ(cat.find("  h100 sxm ").name, "H100-SXM");
  EXPECT_EQ(cat.find("H100").name, "H100-SXM");
  EXPECT_EQ(cat.find("A100").name, "A100-80GB");
  EXPECT_EQ(cat.find("NVIDIA A100-SXM4-80GB").name, "A100-80GB");  // Kineto deviceProperties name
  EXPECT_EQ(cat.find("rtx3090").name, "RTX-3090");
  EXPECT_EQ(cat.find("v100").name, "V100-SXM2-32GB");
}

TEST(GpuCatalog, UnknownGpuListsTheKnownOnes) {
  try {
    stepsim::catalog::shipped().gpus.find("X9000");
    FAIL();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("key cluster.gpu: unknown GPU 'X9000'; known: A100-40GB, A100-80GB", 0), 0u) << msg;
    EXPECT_NE(msg.find("H100-SXM"), std::string::npos);
  }
}

TEST(GpuCatalog, PeakFlopsPerPrecision) {
  const auto& cat = stepsim::catalog::shipped().gpus;
  const GpuSpec& h = cat.find("H100-SXM");
  EXPECT_DOUBLE_EQ(h.peak_flops(Precision::Fp32), h.tf32_flops);  // Megatron: TF32 for fp32 matmuls
  EXPECT_DOUBLE_EQ(h.peak_flops(Precision::Fp16), h.fp16_flops);
  EXPECT_DOUBLE_EQ(h.peak_flops(Precision::Bf16), h.bf16_flops);
  EXPECT_DOUBLE_EQ(h.peak_flops(Precision::Fp8), h.fp8_flops);
  const GpuSpec& a = cat.find("A100-80GB");
  EXPECT_DOUBLE_EQ(a.peak_flops(Precision::Fp8), a.bf16_flops);  // no FP8: BF16 rate
  const GpuSpec& v = cat.find("V100-SXM2-32GB");
  EXPECT_DOUBLE_EQ(v.peak_flops(Precision::Fp32), v.fp32_flops);  // no TF32
  EXPECT_DOUBLE_EQ(v.peak_flops(Precision::Bf16), v.fp32_flops);  // no BF16 tensor cores
  EXPECT_DOUBLE_EQ(v.peak_flops(Precision::Fp8), v.fp32_flops);
  EXPECT_DOUBLE_EQ(v.peak_flops(Precision::Fp16), 125 * kT);
}

TEST(GpuCatalog, LoadsAValidFileAndItsAliases) {
  const auto cat = GpuCatalog::load(write_temp("valid.yaml", one_gpu()));
  ASSERT_EQ(cat.gpus().size(), 1u);
  EXPECT_EQ(cat.find("TG").name, "TEST-GPU");
  EXPECT_DOUBLE_EQ(cat.find("test-gpu").fp8_flops, 0);
  EXPECT_EQ(cat.find("TEST-GPU").memory_bytes, 64ull << 30);
  // Aliases belong to the catalog that declares them, both ways.
  EXPECT_THROW(cat.find("H100"), InputError);
  const auto other = GpuCatalog::load(write_temp("steals_alias.yaml", one_gpu("aliases: [tg]", "aliases: [H100]")));
  EXPECT_EQ(other.find("H100").name, "TEST-GPU");
  EXPECT_EQ(stepsim::catalog::shipped().gpus.find("H100").name, "H100-SXM");
  const GpuCatalog copy = stepsim::catalog::shipped().gpus;
  EXPECT_EQ(copy.find("a100").name, "A100-80GB");
}

TEST(GpuCatalog, StrictLoadingNamesFileAndKey) {
  expect_load_error("unknown_key.yaml", one_gpu("    nvswitch: true\n", "    nvswitch: true\n    nvlink: 900\n"),
                    {"gpus[0] (TEST-GPU).nvlink", "unknown key"});
  expect_load_error("missing_key.yaml", one_gpu("    sm_count: 100\n", ""), {"gpus[0] (TEST-GPU).sm_count", "missing"});
  expect_load_error("zero_bw.yaml", one_gpu("hbm_bandwidth_GBps: 3000", "hbm_bandwidth_GBps: 0"),
                    {"hbm_bandwidth_GBps", "> 0"});
  expect_load_error("neg_fp8.yaml", one_gpu("fp8_tflops: 0", "fp8_tflops: -1"), {"fp8_tflops", ">= 0"});
  expect_load_error("zero_fp16.yaml", one_gpu("fp16_tflops: 800", "fp16_tflops: 0"), {"fp16_tflops", "> 0"});
  expect_load_error("text_number.yaml", one_gpu("memory_GiB: 64", "memory_GiB: lots"), {"memory_GiB", "number"});
  expect_load_error("bad_sm.yaml", one_gpu("sm_count: 100", "sm_count: 1.5"), {"sm_count", "integer"});
  expect_load_error("bad_bool.yaml", one_gpu("nvswitch: true", "nvswitch: maybe"), {"nvswitch", "true or false"});
  expect_load_error("bad_arch.yaml", one_gpu("arch: hopper", "arch: kepler"), {"arch", "kepler"});
  expect_load_error("top_key.yaml", one_gpu() + "extra: 1\n", {"extra", "unknown key"});
  expect_load_error("empty.yaml", "gpus: []\n", {"gpus", "non-empty"});
  expect_load_error("syntax.yaml", "gpus: [\n", {"malformed YAML"});
  std::string dup = one_gpu();
  dup += dup.substr(dup.find("  - name"));
  expect_load_error("duplicate.yaml", dup, {"gpus[1] (TEST-GPU)", "already used"});
  expect_load_error("dup_alias.yaml", one_gpu("aliases: [tg]", "aliases: [test_gpu]"), {"test_gpu", "already used"});
}

TEST(GpuCatalog, MissingFileIsAnInputError) {
  EXPECT_THROW(GpuCatalog::load("/nonexistent/stepsim/gpus.yaml"), InputError);
}

TEST(GpuCatalog, DataDirHonoursEnvironment) {
  const char* old = std::getenv("STEPSIM_DATA_DIR");
  const std::string saved = old ? old : "";
  setenv("STEPSIM_DATA_DIR", "/tmp/elsewhere", 1);
  EXPECT_EQ(stepsim::hw::data_dir(), "/tmp/elsewhere");
  unsetenv("STEPSIM_DATA_DIR");
  EXPECT_EQ(stepsim::hw::data_dir(), STEPSIM_SOURCE_DATA_DIR);
  if (old) setenv("STEPSIM_DATA_DIR", saved.c_str(), 1);
}

}  // namespace
