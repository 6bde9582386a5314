#pragma once
// GPU names as users and tools write them ("H100-SXM 96GB HBM2e, 500W", "H800-SXM5-80GB", "A800-SXM4-80GB (DGX
// A800)", "NVIDIA H100 80GB HBM3") resolved against the catalog: the part's model, form factor (SXM, PCIe, NVL) and
// memory pick the catalog GPU; a power figure becomes the job's power limit; a parenthesis describes the system. What
// the name left open and how it was read is said in notes, never assumed silently (docs/COST-MODELS.md, "GPU names").
#include <optional>
#include <string>
#include <vector>

#include "stepsim/catalog/gpu_catalog.hpp"

namespace stepsim::hw {

struct ResolvedGpu {
  const GpuSpec* gpu = nullptr;
  std::optional<double> power_limit_W;  // "500W" in the name
  std::vector<std::string> notes;       // what was read from the name beyond the catalog entry, and what was assumed
};

// InputError "key cluster.gpu: unknown GPU '<text>'; ..." when no catalog GPU matches, naming the catalog's GPUs of
// the same model when the model is known, or the GPUs that match equally when the name does not decide between them.
ResolvedGpu resolve_gpu_name(const GpuCatalog& catalog, const std::string& text);

// The models and form factors a catalog entry's name and aliases say (GpuCatalog keeps them per entry).
GpuNameKeys name_keys_of(const GpuSpec& g);

}  // namespace stepsim::hw
