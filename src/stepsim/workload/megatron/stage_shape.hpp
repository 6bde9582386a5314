#pragma once
// The shape of one pipeline stage: which layers each of its model chunks holds, and the units (embedding, layers,
// multi-token-prediction depths, head) a pass over a chunk visits. A value computed once per stage.
#include <vector>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::workload::megatron {

// Units of a model chunk whose parameters get gradients together: the embedding, each layer (MTP depth k is unit
// num_layers + k), the head. Unit ids fall along the backward order.
constexpr int kEmbeddingUnit = -1;
constexpr int kHeadUnit = 1 << 20;

// Layers of each model chunk in global order (model chunk k = local chunk x stages + stage): parallelism.pipeline_layers,
// or the layers split evenly.
std::vector<int> model_chunk_layers(const spec::JobSpec& job);

struct StageShape {
  int stage = 0;
  int stages = 1;        // p: pipeline stages
  int chunks = 1;        // v: model chunks per stage (virtual pipeline)
  int microbatches = 1;  // m
  int num_layers = 0;    // of the whole model
  int mtp_layers = 0;
  std::vector<int> chunk_first_layer, chunk_layers;  // per model chunk of this stage (model chunk = chunk * p + stage)

  static StageShape of(const spec::JobSpec& job, int stage);
  bool first_model_chunk(int chunk) const { return stage == 0 && chunk == 0; }
  bool last_model_chunk(int chunk) const { return stage == stages - 1 && chunk == chunks - 1; }
  bool mtp_unit(int unit) const { return unit >= num_layers && unit < kHeadUnit; }
  // Units of a model chunk in the order a pass visits them.
  std::vector<int> units_of(int chunk, bool forward) const;
};

}  // namespace stepsim::workload::megatron
