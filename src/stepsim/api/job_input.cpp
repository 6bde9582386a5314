#include "stepsim/api/job_input.hpp"

#include "stepsim/io/input_error.hpp"
#include "stepsim/input/job_loader.hpp"
#include "stepsim/input/megatron_args.hpp"
#include "stepsim/input/deepspeed_config.hpp"
#include "stepsim/input/hf_config.hpp"
#include "stepsim/input/torchtitan_toml.hpp"
#include "stepsim/io/input_file.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::api {

namespace {

// A cluster section given as text: the keys of the job file's cluster section (or a file's `cluster:` mapping).
YAML::Node cluster_node(const std::string& text, const std::string& source) {
  YAML::Node c = spec::parse_yaml(text, source);
  if (c.IsMap() && c.size() == 1 && c["cluster"].IsMap()) c = c["cluster"];
  if (!c.IsMap()) throw InputError(source + ": cluster must be a mapping of cluster keys");
  return c;
}

// The cluster of a job converted from another tool's input (Megatron arguments, a torchtitan config): a file's path
// (resolved like a job file's cluster include) or a section as text.
void attach_cluster(YAML::Node& root, const JobInput& in, const char* what) {
  if (in.cluster_path.empty() && in.cluster_text.empty()) throw InputError(std::string(what) + " needs --cluster CLUSTER.yaml");
  if (!in.cluster_path.empty()) root["cluster"] = in.cluster_path;
  else root["cluster"] = cluster_node(in.cluster_text, "cluster");
  spec::resolve_includes(root, ".");
}

// A model key --set gives is no longer assumed from the Hugging Face config (as a key written beside hf_config is not).
void drop_overridden_hf_assumptions(YAML::Node& root, const std::vector<std::string>& overrides) {
  YAML::Node assumed = root["model"].IsMap() ? root["model"][spec::kHfAssumedKey] : YAML::Node();
  if (!assumed.IsMap()) return;
  for (const std::string& o : overrides) {
    const size_t eq = o.find('=');
    if (o.rfind("model.", 0) == 0 && eq != std::string::npos) assumed.remove(o.substr(6, eq - 6));
  }
}

}  // namespace

bool has_job(const JobInput& in) {
  return !in.job_path.empty() || !in.megatron_args.empty() || !in.torchtitan_config.empty() ||
         !in.deepspeed_config.empty() || !in.job_text.empty() || !in.hf_config_text.empty();
}

JobTree load_job_tree(const JobInput& in) {
  // An HF config's text is the model of a DeepSpeed config where one is given, else a job of its own.
  const bool hf_text_job = !in.hf_config_text.empty() && in.deepspeed_config.empty();
  const int sources = !in.job_path.empty() + !in.megatron_args.empty() + !in.torchtitan_config.empty() +
                      !in.deepspeed_config.empty() + !(in.job_text.empty() && !hf_text_job);
  if (sources > 1) {
    throw InputError("give one job: a job file, --megatron-args, --torchtitan-config or --deepspeed-config");
  }
  if (!in.hf_config_path.empty() && in.deepspeed_config.empty() && in.job_path.empty()) {
    throw InputError("--hf-config gives the model of a job file or of a --deepspeed-config (not of --megatron-args or "
                     "--torchtitan-config, which give their own)");
  }
  if (!in.cluster_path.empty() && !in.cluster_text.empty()) throw InputError("give a cluster file or a cluster section, not both");
  if (!in.megatron_args.empty()) {
    if (in.cluster_path.empty() && in.cluster_text.empty()) throw InputError("--megatron-args needs --cluster CLUSTER.yaml");
    if (!in.cluster_path.empty()) {
      return {spec::load_megatron_tree(in.megatron_args, in.cluster_path, in.overrides), "megatron-args"};
    }
    YAML::Node root = spec::megatron_args_to_job_node(in.megatron_args);
    root["cluster"] = cluster_node(in.cluster_text, "cluster");
    spec::resolve_includes(root, ".");
    spec::apply_overrides(root, in.overrides);
    return {root, "megatron-args"};
  }
  if (!in.torchtitan_config.empty()) {
    const std::string text =
        spec::read_whole_file(in.torchtitan_config, "torchtitan config", spec::kMaxInputFileBytes);
    YAML::Node root = spec::torchtitan_config_to_job_node(text, in.torchtitan_config);
    attach_cluster(root, in, "--torchtitan-config");
    spec::apply_overrides(root, in.overrides);
    spec::resolve_torchtitan_degrees(root, in.torchtitan_config);
    return {root, in.torchtitan_config};
  }
  if (!in.deepspeed_config.empty()) {
    if (in.hf_config_path.empty() == in.hf_config_text.empty()) {
      throw InputError("--deepspeed-config needs --hf-config CONFIG.json (the model it trains) and --cluster");
    }
    const std::string ds = spec::read_whole_file(in.deepspeed_config, "DeepSpeed config", spec::kMaxInputFileBytes);
    const bool hf_file = !in.hf_config_path.empty();
    const std::string hf = hf_file ? spec::read_whole_file(in.hf_config_path, "Hugging Face config",
                                                           spec::kMaxInputFileBytes)
                                   : in.hf_config_text;
    YAML::Node root =
        spec::deepspeed_config_to_job_node(ds, in.deepspeed_config, hf, hf_file ? in.hf_config_path : "hf_config");
    attach_cluster(root, in, "--deepspeed-config");
    spec::apply_overrides(root, in.overrides);
    drop_overridden_hf_assumptions(root, in.overrides);
    spec::resolve_deepspeed_degrees(root, in.deepspeed_config);
    return {root, in.deepspeed_config};
  }
  if (!in.job_text.empty() || !in.hf_config_text.empty()) {
    if (!in.cluster_path.empty() || !in.cluster_text.empty()) {
      throw InputError("a cluster apart from the job is only for Megatron arguments; the job has its cluster section");
    }
    YAML::Node root = in.job_text.empty() ? YAML::Node(YAML::NodeType::Map) : spec::parse_yaml(in.job_text, in.text_source);
    if (!root.IsMap()) throw InputError(in.text_source + ": a job must be a mapping of sections (model, parallelism, ...)");
    if (!in.hf_config_text.empty()) {
      if (root["model"].IsMap() && root["model"]["hf_config"].IsDefined()) {
        throw InputError("key model.hf_config: give a Hugging Face config as a path in the job or as a config, not both");
      }
      root["model"] = spec::model_from_hf_config(in.hf_config_text, "hf_config", root["model"]);
    }
    spec::resolve_includes(root, ".");
    spec::apply_overrides(root, in.overrides);
    return {root, in.text_source};
  }
  if (in.job_path.empty()) {
    throw InputError("missing job file (or --megatron-args \"...\" / --torchtitan-config T.toml / --deepspeed-config "
                     "DS.json --hf-config CONFIG.json, with --cluster C.yaml)");
  }
  if (!in.cluster_path.empty() || !in.cluster_text.empty()) {
    throw InputError("--cluster is only for --megatron-args, --torchtitan-config and --deepspeed-config; a job file has "
                     "its cluster section");
  }
  YAML::Node root = spec::load_job_tree(in.job_path, in.overrides, in.hf_config_path);
  if (!in.hf_config_path.empty()) drop_overridden_hf_assumptions(root, in.overrides);
  return {root, in.job_path};
}

spec::JobSpec load_job(const JobInput& in) {
  const JobTree t = load_job_tree(in);
  return spec::job_from_node(catalog::shipped().gpus, t.root, t.source, in.overrides);
}

}  // namespace stepsim::api
