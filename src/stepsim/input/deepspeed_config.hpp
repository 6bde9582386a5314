#pragma once
// A DeepSpeed config (the JSON `deepspeed.initialize(config=...)` reads; key names of DeepSpeed's runtime/config.py
// and runtime/zero/config.py) with the Hugging Face config.json of the model it trains -> a job tree (model,
// parallelism, training sections) in the job-file schema, so the same strict converter and validation apply.
// docs/USAGE.md ("DeepSpeed config") lists every key and what becomes of it.
#include <string>

#include <yaml-cpp/yaml.h>

namespace stepsim::spec {

// Parses both texts. Keys that change the step's time or memory become job keys or are refused by name; keys that do
// not (logging, monitors, the scheduler, checkpoint options) are accepted and named in a `read:` note. DeepSpeed runs
// data parallelism over every GPU: parallelism.data and, where the config leaves it to the world size,
// training.global_batch_size are left for resolve_deepspeed_degrees once the cluster is known. Throws InputError
// "<source>: <key>: <rule>".
YAML::Node deepspeed_config_to_job_node(const std::string& ds_json, const std::string& ds_source,
                                        const std::string& hf_json, const std::string& hf_source);

// Completes a tree made by deepspeed_config_to_job_node whose cluster section is resolved: parallelism.data is the
// cluster's GPUs (unless --set gave it), and the global batch the micro-batch x gradient accumulation x data where the
// config did not give train_batch_size; a train_batch_size that is not that product is refused, as DeepSpeed does.
void resolve_deepspeed_degrees(YAML::Node& root, const std::string& source);

}  // namespace stepsim::spec
