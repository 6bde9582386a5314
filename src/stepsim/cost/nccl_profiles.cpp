// data/nccl.yaml -> NcclProfile list, read strictly (unknown keys and out-of-range values name the file and key).
#include <mutex>
#include <set>

#include "stepsim/cost/nccl_params.hpp"
#include "stepsim/hw/gpu_catalog.hpp"
#include "stepsim/spec/input_error.hpp"
#include "stepsim/spec/job_loader.hpp"
#include "stepsim/spec/yaml_reader.hpp"

namespace stepsim::cost {

NcclProfiles NcclProfiles::load(const std::string& path) {
  const YAML::Node root = spec::parse_yaml(spec::read_text_file(path, "NCCL profile file"), path);
  if (!root.IsMap() || !root["profiles"].IsSequence()) throw InputError(path + ": profiles: must be a list");
  if (root.size() != 1) throw InputError(path + ": only the key 'profiles' is allowed at the top level");
  NcclProfiles out;
  std::set<std::string> seen_gpus;
  const YAML::Node list = root["profiles"];
  for (size_t i = 0; i < list.size(); ++i) {
    spec::StrictSection s(list[i], "profiles[" + std::to_string(i) + "]", path);
    NcclProfile p;
    p.name = s.get_string("name", "");
    if (p.name.empty()) s.fail("name", "is required");
    const YAML::Node gpus = s.child("gpus");
    if (!gpus.IsSequence() || gpus.size() == 0) s.fail("gpus", "must be a non-empty list of GPU catalog names");
    for (const auto& g : gpus) {
      if (!g.IsScalar()) s.fail("gpus", "must be a list of names");
      const std::string name = hw::GpuCatalog::builtin().find(g.Scalar()).name;
      if (!seen_gpus.insert(name).second) s.fail("gpus", "GPU " + name + " already has a profile");
      p.gpus.push_back(name);
    }
    p.channels = static_cast<int>(s.require_int("channels", 1, 64));
    p.params.alpha_us = s.get_double("alpha_us", -1, 0, 1e6);
    p.params.beta_us = s.get_double("beta_us", -1, 0, 1e6);
    p.params.gamma_us = s.get_double("gamma_us", -1, 0, 1e6);
    p.params.intra_efficiency = s.get_double("intra_efficiency", -1, 1e-3, 1.0);
    p.params.inter_efficiency = s.get_double("inter_efficiency", -1, 1e-3, 1.0);
    p.params.reduce_GBps = s.get_double("reduce_GBps", -1, 1e-3, 1e6);
    for (const char* k : {"alpha_us", "beta_us", "gamma_us", "intra_efficiency", "inter_efficiency", "reduce_GBps"}) {
      if (!s.has(k)) s.fail(k, "is required");
    }
    p.source = s.get_string("source", "");
    if (p.source.empty()) s.fail("source", "is required: say where the numbers come from");
    s.finish();
    out.profiles_.push_back(std::move(p));
  }
  return out;
}

const NcclProfiles& NcclProfiles::builtin() {
  static const NcclProfiles p = load(hw::data_dir() + "/nccl.yaml");
  return p;
}

const NcclProfile& NcclProfiles::find(const std::string& gpu) const {
  const std::string name = hw::GpuCatalog::builtin().find(gpu).name;
  std::string known;
  for (const auto& p : profiles_) {
    for (const auto& g : p.gpus) {
      if (g == name) return p;
      known += (known.empty() ? "" : ", ") + g;
    }
  }
  throw InputError("cluster.gpu: no NCCL profile for GPU '" + name + "' in data/nccl.yaml; profiles exist for: " + known);
}

}  // namespace stepsim::cost
