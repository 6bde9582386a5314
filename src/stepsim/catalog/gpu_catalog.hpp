#pragma once
// GPU catalog: datasheet figures per GPU model, read from data/gpus.yaml (data, not code).
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::hw {

// GPU architectures in the order of their CUDA compute capability (7.0, 8.0, 8.9, 9.0, 10.x), so that `arch >=
// GpuArch::Hopper` reads "Hopper or later". data/gpus.yaml, data/efficiency.yaml's `archs` and the calibration store
// name them by name_of().
enum class GpuArch { Volta, Ampere, Ada, Hopper, Blackwell };
constexpr GpuArch kGpuArchs[] = {GpuArch::Volta, GpuArch::Ampere, GpuArch::Ada, GpuArch::Hopper, GpuArch::Blackwell};
const char* name_of(GpuArch a);  // "volta", "ampere", "ada", "hopper", "blackwell"

struct GpuSpec {
  std::string name;          // catalog key, e.g. "H100-SXM"
  GpuArch arch = GpuArch::Hopper;
  int sm_count = 0;
  double fp32_flops = 0;     // dense FLOP/s (no sparsity)
  double tf32_flops = 0;
  double fp16_flops = 0;     // tensor-core dense
  double bf16_flops = 0;
  double fp8_flops = 0;      // 0 = not supported
  double fp4_flops = 0;      // dense NVFP4 (e2m1) tensor-core rate; 0 = not supported (data/gpus.yaml fp4_tflops)
  double hbm_bandwidth_Bps = 0;
  uint64_t memory_bytes = 0;
  bool nvswitch = false;     // node has NVSwitch (NVLS possible on hopper/blackwell)
  double intra_node_GBps = 0;  // link to the node's other GPUs, GB/s per direction (NVLink, else PCIe)
  // GPUs one NVLink domain spans when it is larger than a host (GB200 NVL72: 72); 0 = the node is the domain.
  int nvlink_domain_gpus = 0;
  // The board's default (maximum) power, W: the power model's reference for cluster.power_limit_W. 0 = not in the
  // catalog entry (a power limit is then refused).
  double tdp_W = 0;
  std::string source;        // where the figures come from
  std::vector<std::string> aliases;  // other names users write (normalized: lower case, '-' separators)

  // Dense tensor-core FLOP/s for GEMMs in the training precision (fp32 uses TF32 as Megatron does).
  double peak_flops(spec::Precision p) const;
};

// What a GPU's name and aliases say, cut as gpu_name.hpp cuts the name a user writes: the model words ("h100") and
// form factors ("sxm", "pcie", "nvl"). Computed once per catalog entry when the catalog loads.
struct GpuNameKeys {
  std::set<std::string> models, forms;
};

class GpuCatalog {
 public:
  // Loads a catalog YAML. Throws InputError naming the file and key on malformed data.
  static GpuCatalog load(const std::string& path);

  // Throws InputError "key cluster.gpu: unknown GPU 'X'; known: ..." when absent.
  const GpuSpec& find(const std::string& name) const;
  // The GPU whose name or alias is `name` (same matching as find), or nullptr.
  const GpuSpec* try_find(const std::string& name) const;
  const std::vector<GpuSpec>& gpus() const { return gpus_; }
  // The name keys of gpus()[i].
  const GpuNameKeys& name_keys(size_t i) const { return name_keys_.at(i); }

 private:
  std::vector<GpuSpec> gpus_;
  std::vector<std::string> normalized_names_;  // normalize(gpus_[i].name): try_find runs once per job and per row
  std::vector<GpuNameKeys> name_keys_;
};

// The job's GPU: the catalog's entry for cluster.gpu with cluster.gpu's inline figures applied (memory, HBM bandwidth,
// SMs with the rates scaled per SM, NVLink). Every lookup of a job's GPU goes through it.
GpuSpec effective_gpu(const GpuCatalog& catalog, const spec::ClusterSpec& cluster);


// Directory with the data files: $STEPSIM_DATA_DIR if set, else the source tree's data/ (compiled in).
std::string data_dir();

}  // namespace stepsim::hw
