// data/nccl.yaml -> NcclProfile list, read strictly (unknown keys and out-of-range values name the file and key).
#include <algorithm>
#include <iterator>
#include <mutex>
#include <set>

#include "stepsim/catalog/nccl_params.hpp"
#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/io/input_file.hpp"
#include "stepsim/io/yaml_reader.hpp"
#include "stepsim/job/job_spec.hpp"

namespace stepsim::cost {
namespace {

// The six parameters; absent keys keep `base` (a band inherits its profile's values).
NcclParams read_params(spec::StrictSection& s, const NcclParams& base) {
  NcclParams p;
  p.alpha_us = s.get_double("alpha_us", base.alpha_us, 0, 1e6);
  p.beta_us = s.get_double("beta_us", base.beta_us, 0, 1e6);
  p.gamma_us = s.get_double("gamma_us", base.gamma_us, 0, 1e6);
  // Above 1 would mean faster than the link; calibrations may find up to 1.5 where the nominal rate is low.
  p.intra_efficiency = s.get_double("intra_efficiency", base.intra_efficiency, 1e-3, 1.5);
  p.inter_efficiency = s.get_double("inter_efficiency", base.inter_efficiency, 1e-3, 1.5);
  p.reduce_GBps = s.get_double("reduce_GBps", base.reduce_GBps, 1e-3, 1e6);
  return p;
}

}  // namespace

NcclProfiles NcclProfiles::load(const std::string& path, const hw::GpuCatalog& catalog) {
  try {
    return load_profiles(path, catalog);
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": " + e.what());  // what the checks did not name (odd key types, ...)
  }
}

NcclProfiles NcclProfiles::load_profiles(const std::string& path, const hw::GpuCatalog& catalog) {
  const YAML::Node root = spec::parse_yaml(spec::read_text_file(path, "NCCL profile file"), path);
  if (!root.IsMap() || !root["profiles"].IsDefined() || !root["profiles"].IsSequence()) {
    throw InputError(path + ": profiles: must be a list");
  }
  for (const auto& kv : root) {
    const std::string k = kv.first.as<std::string>();
    if (k != "profiles" && k != "transports" && k != "launch")
      throw InputError(path + ": key " + k + ": only 'profiles', 'transports' and 'launch' are allowed at the top level");
  }
  NcclProfiles out;
  if (const YAML::Node tr = root["transports"]; tr && !tr.IsNull()) {
    std::string known;
    for (const std::string_view t : spec::kInterNodeTransports) known += (known.empty() ? "" : ", ") + std::string(t);
    if (!tr.IsMap()) throw InputError(path + ": transports: must map a transport (" + known + ") to its settings");
    for (const auto& kv : tr) {
      const std::string name = kv.first.as<std::string>();
      if (std::find(std::begin(spec::kInterNodeTransports), std::end(spec::kInterNodeTransports), name) ==
          std::end(spec::kInterNodeTransports)) {
        throw InputError(path + ": transports." + name + ": must be one of " + known);
      }
      spec::StrictSection ts(kv.second, "transports." + name, path);
      NetTransport& t = out.transports_[name];
      t.net_latency_scale = ts.get_double("net_latency_scale", 1.0, 0.01, 1000);
      t.bandwidth_efficiency = ts.get_double("bandwidth_efficiency", 1.0, 0.01, 1);
      t.note = ts.get_string("note", "");
      if (ts.get_string("source", "").empty()) ts.fail("source", "is required: say where the number comes from");
      ts.finish();
    }
  }
  if (const YAML::Node ln = root["launch"]; ln && !ln.IsNull()) {
    spec::StrictSection ls(ln, "launch", path);
    GroupLaunch g;
    g.kernel_us_per_gpu = ls.get_double("kernel_us_per_gpu", 0, 0, 1e4);
    g.p2p_op_us = ls.get_double("p2p_op_us", 0, 0, 1e4);
    if (ls.get_string("source", "").empty()) ls.fail("source", "is required: say where the numbers come from");
    ls.finish();
    out.group_launch_ = g;
  }
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
      const hw::GpuSpec* gpu = catalog.try_find(g.Scalar());
      if (!gpu) s.fail("gpus", "unknown GPU '" + g.Scalar() + "' (not in the GPU catalog)");
      const std::string name = gpu->name;
      if (!seen_gpus.insert(name).second) s.fail("gpus", "GPU " + name + " already has a profile");
      p.gpus.push_back(name);
    }
    p.channels = static_cast<int>(s.require_int("channels", 1, 64));
    for (const char* k : {"alpha_us", "beta_us", "gamma_us", "intra_efficiency", "inter_efficiency", "reduce_GBps"}) {
      if (!s.has(k)) s.fail(k, "is required");
    }
    p.params = read_params(s, NcclParams{});
    p.nvls_efficiency = s.get_double("nvls_efficiency", 0, 0, 1);
    const YAML::Node bands = s.child("bands");
    if (bands && !bands.IsNull()) {
      if (!bands.IsSequence()) s.fail("bands", "must be a list of {nodes, chunk_bytes, alpha_us, ...}");
      for (size_t b = 0; b < bands.size(); ++b) {
        spec::StrictSection bs(bands[b], s.key_path("bands") + "[" + std::to_string(b) + "]", path);
        NcclParamRow row;
        row.nodes = static_cast<int>(bs.require_int("nodes", 1, 1 << 20));
        row.chunk_bytes = static_cast<uint64_t>(bs.require_int("chunk_bytes", 0, int64_t{1} << 40));
        row.params = read_params(bs, p.params);
        bs.finish();
        p.bands.push_back(row);
      }
    }
    p.source = s.get_string("source", "");
    if (p.source.empty()) s.fail("source", "is required: say where the numbers come from");
    s.finish();
    out.profiles_.push_back(std::move(p));
  }
  return out;
}

const NetTransport& NcclProfiles::transport(const std::string& name) const {
  static const NetTransport kVerbs;
  const auto it = transports_.find(name);
  return it == transports_.end() ? kVerbs : it->second;
}

const NcclProfile* NcclProfiles::lookup(const hw::GpuSpec& gpu) const {
  for (const auto& p : profiles_) {
    if (std::find(p.gpus.begin(), p.gpus.end(), gpu.name) != p.gpus.end()) return &p;
  }
  return nullptr;
}

const NcclProfile& NcclProfiles::find(const hw::GpuSpec& gpu) const {
  if (const NcclProfile* p = lookup(gpu)) return *p;
  const std::string& name = gpu.name;
  std::string known;
  for (const auto& p : profiles_) {
    for (const auto& g : p.gpus) known += (known.empty() ? "" : ", ") + g;
  }
  throw InputError("cluster.gpu: no NCCL profile for GPU '" + name + "' in data/nccl.yaml; profiles exist for: " + known);
}

}  // namespace stepsim::cost
