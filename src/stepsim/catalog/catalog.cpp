#include "stepsim/catalog/catalog.hpp"

#include <map>
#include <memory>
#include <mutex>

namespace stepsim::catalog {

Catalog Catalog::load(const std::string& dir) {
  Catalog c;
  c.dir = dir;
  c.gpus = hw::GpuCatalog::load(dir + "/gpus.yaml");
  c.efficiency = cost::EfficiencyCatalog::load(dir + "/efficiency.yaml");
  c.nccl = cost::NcclProfiles::load(dir + "/nccl.yaml", c.gpus);
  c.nccl_tuner = cost::NcclTunerTable::load(dir + "/nccl-tuner.yaml");
  return c;
}

const Catalog& shipped() {
  // Keyed by directory: tests point STEPSIM_DATA_DIR elsewhere within one process.
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<const Catalog>> loaded;
  const std::string dir = hw::data_dir();
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(dir);
  if (it == loaded.end()) it = loaded.emplace(dir, std::make_unique<const Catalog>(Catalog::load(dir))).first;
  return *it->second;
}

}  // namespace stepsim::catalog
