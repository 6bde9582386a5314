#include "stepsim/api/dump_job.hpp"

#include <filesystem>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "stepsim/input/hf_config.hpp"
#include "stepsim/input/torchtitan_toml.hpp"

namespace stepsim::api {

namespace {

// stepsim's own keys in a converted tree start with '_' (the cluster file's name for messages, the notes of what a
// converter read or assumed): they are said in the header instead.
void drop_bookkeeping(YAML::Node node) {
  if (!node.IsMap()) return;
  std::vector<std::string> own;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string k = it->first.Scalar();
    if (!k.empty() && k[0] == '_') own.push_back(k);
    else drop_bookkeeping(it->second);
  }
  for (const std::string& k : own) node.remove(k);
}

void comment_lines(std::string& out, const YAML::Node& n, const std::string& prefix) {
  if (!n.IsDefined()) return;  // (a missing key's node is not valid for anything else)
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      out += "# " + prefix + it->first.Scalar() + ": " + it->second.Scalar() + "\n";
    }
  } else if (n.IsSequence()) {
    for (const auto& x : n) out += "# " + prefix + x.Scalar() + "\n";
  }
}

}  // namespace

std::string resolved_job_yaml(const JobInput& in) {
  const JobTree t = load_job_tree(in);
  YAML::Node root = YAML::Clone(t.root);
  const YAML::Node& read = t.root;
  std::string header = "# stepsim simulate --dump-job: the job as read from " + t.source;
  for (const std::string& o : in.overrides) header += " --set " + o;
  header += "\n";
  if (read["model"].IsMap()) comment_lines(header, read["model"][spec::kHfAssumedKey], "assumed (Hugging Face config) ");
  if (read["training"].IsMap()) comment_lines(header, read["training"][spec::kInputNotesKey], "read: ");
  if (YAML::Node sim = root["simulation"]; sim.IsMap()) {
    for (const char* key : {"calibration_store", "overlap_file"}) {
      if (!sim[key].IsScalar()) continue;
      const std::string path = sim[key].Scalar();
      if (!path.empty() && path != "none") sim[key] = std::filesystem::absolute(path).lexically_normal().string();
    }
  }
  drop_bookkeeping(root);
  YAML::Emitter e;
  e << root;
  return header + e.c_str() + "\n";
}

}  // namespace stepsim::api
