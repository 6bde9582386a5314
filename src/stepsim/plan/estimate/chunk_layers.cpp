#include "stepsim/plan/estimate/chunk_layers.hpp"

#include "stepsim/workload/megatron/stage_shape.hpp"

namespace stepsim::plan::estimate {

ChunkLayers chunk_layers(const spec::JobSpec& job) {
  const auto& par = job.parallelism;
  ChunkLayers c;
  c.stages = par.pipeline;
  c.virtual_stages = par.virtual_stages;
  const int chunks = c.count();
  c.len = workload::megatron::model_chunk_layers(job);
  c.first.assign(chunks, 0);
  for (int k = 1; k < chunks; ++k) c.first[k] = c.first[k - 1] + c.len[k - 1];
  return c;
}

}  // namespace stepsim::plan::estimate
