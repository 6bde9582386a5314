// Every Hugging Face fixture through the whole pipeline (job file with model: {hf_config}), checked
// against the parameter count each model's publisher states, then simulated.
#include <gtest/gtest.h>

#include <filesystem>

#include "stepsim/assemble/simulation.hpp"
#include "stepsim/workload/model_dims.hpp"
#include "test_util.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim {
namespace {

struct Published {
  const char* file;
  double billions;  // total parameters as published on the model card / paper
  const char* parallel;
};

// Published totals: Llama-2 paper (7B: 6.74B), Meta Llama 3 card (70.6B), Mistral 7B (7.24B), Mixtral 8x7B
// (46.7B), Qwen2-7B card (7.6B), Qwen1.5-MoE-A2.7B (14.3B), GPT-2 small (124M), GPT-NeoX-20B (20.6B),
// DeepSeek-V2-Lite (15.7B), DeepSeek-V3 (671B without the 14B multi-token-prediction module).
const Published kModels[] = {
    {"llama-2-7b-hf.json", 6.74, "tensor: 1"},
    {"meta-llama-3-70b.json", 70.6, "tensor: 8"},
    {"mistral-7b-v0.1.json", 7.24, "tensor: 1"},
    {"mixtral-8x7b-v0.1.json", 46.7, "tensor: 1, expert: 8"},
    {"qwen2-7b.json", 7.6, "tensor: 1"},
    {"qwen1.5-moe-a2.7b.json", 14.3, "tensor: 1, expert: 4"},
    {"gpt2.json", 0.124, "tensor: 1"},
    {"gpt-neox-20b.json", 20.6, "tensor: 8"},
    {"deepseek-v2-lite.json", 15.7, "tensor: 1, expert: 8"},
    {"deepseek-v3.json", 671, "tensor: 8, expert: 8, sequence_parallel: true"},
};

TEST(HfModels, ParameterCountsMatchPublishedTotals) {
  namespace fs = std::filesystem;
  for (const Published& m : kModels) {
    const fs::path dir = fs::path(stepsim::test::temp_dir()) / "hf" / m.file;
    fs::create_directories(dir);
    fs::copy_file(test::source_dir() + "/tests/data/hf/" + m.file, dir / "config.json", fs::copy_options::overwrite_existing);
    const int gpus = 64;
    std::ofstream(dir / "job.yaml") << "model: {hf_config: config.json, seq_length: 1024}\n"
                                       "parallelism: {" << m.parallel << "}\n"
                                       "training: {micro_batch_size: 1, global_batch_size: 64}\n"
                                       "cluster: {gpu: H100-SXM, num_gpus: " << gpus << ", gpus_per_node: 8}\n";
    const spec::JobSpec job = spec::load_job_file(stepsim::catalog::shipped().gpus, (dir / "job.yaml").string());
    const double total = static_cast<double>(workload::total_parameters(job.model)) / 1e9;
    EXPECT_NEAR(total, m.billions, 0.02 * m.billions) << m.file;
    // Small models simulate end to end here; the big ones only have their memory built (one step of
    // DeepSeek-V3 on 64 GPUs is legal but slow to check in a unit test).
    if (m.billions < 50) {
      const sim::Simulation s = sim::run_simulation(stepsim::catalog::shipped(), job, {0});
      EXPECT_GT(s.result.step_ns, 0) << m.file;
    }
  }
}

}  // namespace
}  // namespace stepsim
