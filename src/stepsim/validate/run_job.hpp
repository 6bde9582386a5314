#pragma once
// From a published run to what stepsim simulates and compares with: the job tree (every setting the source leaves
// unstated filled by a documented rule, each one listed as an assumption), the FLOP convention of the source, and
// the measured step time in seconds.
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/validate/published_run.hpp"

namespace stepsim::validate {

// How a source counts FLOPs when it reports TFLOP/s (../shared/data/published-runs/README.md):
//  Model:    3 x forward (72·B·s·l·h²·(1 + s/6h + V/12lh) for GPT), Megatron 2024, NeMo, Llama 3, DGX Cloud;
//  Hardware: the recompute forward too, 4 x forward for the layers, 3 x for the logits
//            (96·B·s·l·h²·(1 + s/6h + V/16lh)), Narayanan 2021, BLOOM, MT-NLG.
enum class FlopConvention { Model, Hardware };

// Megatron-LM 2021-22 (Narayanan 2021, MT-NLG, BLOOM's Megatron-DeepSpeed): no sequence parallelism, no
// FlashAttention, hardware FLOPs. Everything else is taken as Megatron-Core era. Decided by the source name.
bool is_2021_megatron(const PublishedRun& r);
FlopConvention flop_convention(const PublishedRun& r);

// FLOPs of one step under a convention: per sequence, forward = layers x (2·s·(linear weights) + 4·s²·q_width)
// + 2·s·h·V (non-causal attention, as Megatron's formula counts it); MoE layers count top-k routed experts.
double step_flops(const PublishedRun& r, FlopConvention c);

// Peak dense TFLOP/s the source's MFU refers to (the row's precision on its GPU; fp8 rows' MFU is taken against
// the bf16 peak, as NeMo and Megatron report it).
double mfu_peak_tflops(const hw::GpuCatalog& gpus, const PublishedRun& r);

// The catalog GPU of the row's `gpu` cell, without a trailing parenthesis ("H100-SXM5-80GB (700W)" -> H100-SXM).
// InputError "column gpu: ..." when the catalog does not know it.
const hw::GpuSpec& gpu_of(const hw::GpuCatalog& gpus, const PublishedRun& r);
// The catalog GPU of the row with the power limit its name states ("H100-SXM-96GB at 500 W"), for tables by GPU.
std::string gpu_label(const hw::GpuCatalog& gpus, const PublishedRun& r);

// Measured step time: step_time_s if given, else from tokens_per_s_per_gpu, else from tflops_per_gpu (with the
// source's convention), else from mfu. `how` says which.
double measured_step_time_s(const hw::GpuCatalog& gpus, const PublishedRun& r, std::string* how = nullptr);

struct RunJob {
  YAML::Node root;                    // a complete job tree (model, parallelism, training, cluster)
  std::vector<std::string> assumptions;  // what was not in the row, and what was used
  std::vector<std::string> stated;       // the row's optional recipe columns that were given ("column: value")
};
RunJob job_for_run(const hw::GpuCatalog& gpus, const PublishedRun& r);

}  // namespace stepsim::validate
