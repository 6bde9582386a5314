#include "stepsim/workload/megatron/stage_shape.hpp"

#include <algorithm>

namespace stepsim::workload::megatron {

std::vector<int> model_chunk_layers(const spec::JobSpec& job) {
  const auto& par = job.parallelism;
  const size_t chunks = static_cast<size_t>(par.pipeline) * par.virtual_stages;
  if (!par.pipeline_layers.empty()) return par.pipeline_layers;
  return std::vector<int>(chunks, job.model.num_layers / static_cast<int>(chunks));
}

StageShape StageShape::of(const spec::JobSpec& job, int stage) {
  const auto& par = job.parallelism;
  StageShape s;
  s.stage = stage;
  s.stages = par.pipeline;
  s.chunks = par.virtual_stages;
  s.microbatches = static_cast<int>(job.num_microbatches());
  s.num_layers = job.model.num_layers;
  s.mtp_layers = job.model.mtp_layers;
  const std::vector<int> per_chunk = model_chunk_layers(job);
  int first = 0;
  s.chunk_first_layer.assign(s.chunks, 0);
  s.chunk_layers.assign(s.chunks, 0);
  for (size_t k = 0; k < per_chunk.size(); ++k) {
    const int chunk = static_cast<int>(k) / s.stages, st = static_cast<int>(k) % s.stages;
    if (st == stage) {
      s.chunk_first_layer[chunk] = first;
      s.chunk_layers[chunk] = per_chunk[k];
    }
    first += per_chunk[k];
  }
  return s;
}

std::vector<int> StageShape::units_of(int chunk, bool forward) const {
  std::vector<int> u;
  if (first_model_chunk(chunk)) u.push_back(kEmbeddingUnit);
  for (int i = 0; i < chunk_layers[chunk]; ++i) u.push_back(chunk_first_layer[chunk] + i);
  if (last_model_chunk(chunk)) {
    // Multi-token prediction depths follow the decoder on the last stage (unit = num_layers + k).
    for (int k = 0; k < mtp_layers; ++k) u.push_back(num_layers + k);
    u.push_back(kHeadUnit);
  }
  if (!forward) std::reverse(u.begin(), u.end());
  return u;
}

}  // namespace stepsim::workload::megatron
