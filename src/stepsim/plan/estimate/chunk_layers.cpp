#include "stepsim/plan/estimate/chunk_layers.hpp"

namespace stepsim::plan::estimate {

ChunkLayers chunk_layers(const spec::JobSpec& job) {
  const auto& par = job.parallelism;
  ChunkLayers c;
  c.stages = par.pipeline;
  c.virtual_stages = par.virtual_stages;
  const int chunks = c.count();
  c.len = par.pipeline_layers;
  if (c.len.empty()) c.len.assign(chunks, job.model.num_layers / chunks);
  c.first.assign(chunks, 0);
  for (int k = 1; k < chunks; ++k) c.first[k] = c.first[k - 1] + c.len[k - 1];
  return c;
}

}  // namespace stepsim::plan::estimate
