#pragma once
// The shipped constants as one value: the GPU catalog (data/gpus.yaml), the compute model's efficiency tables
// (data/efficiency.yaml), the NCCL profiles (data/nccl.yaml) and NCCL's tuning constants (data/nccl-tuner.yaml).
// Loaded once per data directory and passed to the model factories that read it (sim/simulation.hpp, cost/), so a
// test, a what-if or the Python module can hand a model another catalog. The overlap coefficients (data/overlap.yaml)
// and the calibration store stay files a job names (simulation.overlap_file, simulation.calibration_store).
#include <string>

#include "stepsim/catalog/efficiency_table.hpp"
#include "stepsim/catalog/nccl_params.hpp"
#include "stepsim/catalog/nccl_tuner_table.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"

namespace stepsim::catalog {

struct Catalog {
  std::string dir;  // where the files were read
  hw::GpuCatalog gpus;
  cost::EfficiencyCatalog efficiency;
  cost::NcclProfiles nccl;
  cost::NcclTunerTable nccl_tuner;

  // Reads the four files of `dir`; InputError naming the file and the key on any bad data.
  static Catalog load(const std::string& dir);

  // Lookups by a GPU name as users write it (InputError for an unknown GPU or one without an NCCL profile).
  const hw::GpuSpec& gpu(const std::string& name) const { return gpus.find(name); }
  const cost::NcclProfile& nccl_profile(const std::string& gpu_name) const { return nccl.find(gpu(gpu_name)); }
};

// The catalog of hw::data_dir() ($STEPSIM_DATA_DIR, else the source tree's data/), read once per directory for the
// process. Only the entry points call it (api/, cli/, the Python module, benches, tests); everything below takes a
// Catalog.
const Catalog& shipped();

}  // namespace stepsim::catalog
