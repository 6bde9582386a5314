#pragma once
// Layers per model chunk when they do not divide pipeline x virtual_stages (Megatron-Core's uneven pipeline split):
// an explicit list, Megatron's --decoder-first/last-pipeline-num-layers, --account-for-embedding/loss-in-pipeline-
// split, or stepsim's automatic rule. docs/MODEL.md ("Pipeline split") states each rule.
#include <string>
#include <vector>

namespace stepsim::spec {

struct PipelineSplitRequest {
  int num_layers = 0;
  int pipeline = 1;
  int virtual_stages = 1;
  std::vector<int> pipeline_layers;  // explicit, model-chunk order (chunk * pipeline + stage)
  int first_stage_layers = 0;        // 0 = not given
  int last_stage_layers = 0;
  bool account_for_embedding = false;
  bool account_for_loss = false;
  int mtp_layers = 0;  // multi-token prediction depths, all on the last model chunk (the automatic rule counts them)
  std::string layout;  // Megatron-Core's --pipeline-model-parallel-layout string; empty = not given
};

struct PipelineSplit {
  std::vector<int> layers;  // per model chunk in layer order; empty = even (num_layers / chunks each)
  std::string rule;         // how it was made, for the summary ("even", "automatic: ...", ...)
};

// Throws InputError "<source>: key parallelism.<key>: <rule>" when the request cannot be met.
PipelineSplit make_pipeline_split(const PipelineSplitRequest& r, const std::string& source);

// Megatron-Core's pipeline layout string ("Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"): one entry per model chunk in layer order
// (chunk = virtual stage x pipeline + stage), its transformer layers counted. Grammar as Megatron-Core reads it: `|`
// separates chunks, `E` embedding, `t` transformer layer, `m` multi-token prediction layer, `L` loss, `x*n` and
// `(...)*n` repeat, commas are cosmetic. Throws InputError "<error_prefix><rule>"; the expansion is bounded.
struct PipelineLayout {
  std::vector<int> layers;  // transformer layers per model chunk
  int mtp_layers = 0;       // 'm' entries (all on the last chunk)
};
PipelineLayout parse_pipeline_layout(const std::string& layout, const std::string& error_prefix);

// "7, 8 x 14, 7": a split in a line.
std::string describe_layers(const std::vector<int>& layers);

}  // namespace stepsim::spec
