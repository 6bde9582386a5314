#pragma once
// The GPU's waits for the host when the host stops at syncs (Megatron-Core's dropless MoE dispatcher copies the
// tokens per expert to the host every MoE layer forward). Between two syncs the host and the GPU work through a
// stage's micro-batch like a two-machine flow shop: the GPU runs a stretch of ops only once the host has issued it.
#include <vector>

#include "stepsim/plan/estimate/chunk_layers.hpp"
#include "stepsim/plan/estimate/stage_costs.hpp"
#include "stepsim/plan/plan_estimate.hpp"

namespace stepsim::plan::estimate {

// A stretch of a stage's ops: the host's time to issue it, the GPU's time to run it, and whether the host waits for
// the GPU after it (a sync).
struct IssueBlock {
  double issue_s = 0, gpu_s = 0;
  bool sync_after = false;
};

// The GPU's waits for the host over one cycle of blocks (a micro-batch of a stage, repeated), and the syncs in it.
struct CycleWaits {
  double fluid_s = 0;  // the flow shop's waits
  int syncs = 0;
};
CycleWaits host_waits_with_syncs(const std::vector<IssueBlock>& cycle);

// A model chunk's micro-batch as the host issues it under 1F1B (its forward, then its backward), from the embedding
// (first) to the head (last) where the chunk holds them.
std::vector<IssueBlock> chunk_cycle(const LayerCosts& lc, int first_layer, int layers, bool first, bool last);

// A stage's micro-batch, its model chunks one after another, as one cycle of the flow shop.
CycleWaits stage_host_waits(const LayerCosts& lc, const ChunkLayers& chunks, int stage);

// With host syncs the host's lead ends at every sync, so a stage's micro-batch is a chain of sync-to-sync segments.
// Their waits (plus the probe's measured wait per sync that a fluid flow shop misses) replace the probe's per-layer
// ones, which it saw with the whole model's backward between two forwards: a stage of a few layers per chunk has a
// backward that may barely outrun its host. Charged to the stage's forward.
void chain_host_syncs(const LayerCosts& lc, const ChunkLayers& chunks, std::vector<StageCosts>& st);

}  // namespace stepsim::plan::estimate
