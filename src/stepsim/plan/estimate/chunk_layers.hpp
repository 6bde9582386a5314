#pragma once
// Which layers each model chunk holds, in global chunk order (chunk c = stage + local chunk x stages, Megatron's
// interleaved placement), as job_for placed them.
#include <vector>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::plan::estimate {

struct ChunkLayers {
  int stages = 1, virtual_stages = 1;
  std::vector<int> first, len;  // per chunk: its first layer and how many it holds

  int count() const { return stages * virtual_stages; }
  int of(int stage, int local_chunk) const { return stage + local_chunk * stages; }
  int end(int chunk) const { return first[chunk] + len[chunk]; }
  bool has_embedding(int chunk) const { return chunk == 0; }
  bool has_head(int chunk) const { return chunk == count() - 1; }
};

ChunkLayers chunk_layers(const spec::JobSpec& job);

}  // namespace stepsim::plan::estimate
