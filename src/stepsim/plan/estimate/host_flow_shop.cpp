#include "stepsim/plan/estimate/host_flow_shop.hpp"

#include <algorithm>

namespace stepsim::plan::estimate {

namespace {

// A part splits at its first sync: the ops up to it, then the rest.
void push_issue_blocks(std::vector<IssueBlock>& out, const LayerCosts::Part& x) {
  out.push_back({x.pre_issue_s, x.pre_gpu_s, x.syncs});
  if (x.syncs) out.push_back({x.issue_s - x.pre_issue_s, x.gpu() - x.pre_gpu_s, false});
}

size_t first_sync_block(const std::vector<IssueBlock>& cycle) {
  for (size_t i = 0; i < cycle.size(); ++i) {
    if (cycle[i].sync_after) return i;
  }
  return cycle.size();
}

// One sync-to-sync segment: within a block of many small ops the GPU keeps up with the issue as it goes, so the
// segment lasts max_j (I_1 + ... + I_j + G_j+1 + ... + G_n) over j = 0..n (I: issue, G: GPU); a sync starts the next
// segment with both machines idle.
double flow_shop_segment(const std::vector<const IssueBlock*>& seg) {
  double g_rest = 0;
  for (const IssueBlock* x : seg) g_rest += x->gpu_s;
  double issued = 0, longest = g_rest;
  for (const IssueBlock* x : seg) {
    issued += x->issue_s;
    g_rest -= x->gpu_s;
    longest = std::max(longest, issued + g_rest);
  }
  return longest;
}

}  // namespace

CycleWaits host_waits_with_syncs(const std::vector<IssueBlock>& cycle) {
  const size_t n = cycle.size();
  const size_t first = first_sync_block(cycle);
  double gpu = 0, issue = 0;
  for (const IssueBlock& b : cycle) gpu += b.gpu_s, issue += b.issue_s;
  // Without syncs the host's lead carries over from cycle to cycle: the cycle lasts max(sum I, sum G).
  if (first == n) return {std::max(0.0, issue - gpu), 0};
  double total = 0;
  int syncs = 0;
  std::vector<const IssueBlock*> seg;
  for (size_t k = 1; k <= n; ++k) {  // from the block after the first sync, once around
    const IssueBlock& b = cycle[(first + k) % n];
    seg.push_back(&b);
    if (!b.sync_after) continue;
    total += flow_shop_segment(seg);
    ++syncs;
    seg.clear();
  }
  return {std::max(0.0, total - gpu), syncs};
}

std::vector<IssueBlock> chunk_cycle(const LayerCosts& lc, int first_layer, int layers, bool first, bool last) {
  std::vector<IssueBlock> cycle;
  if (first) push_issue_blocks(cycle, lc.first_fwd);
  for (int l = first_layer; l < first_layer + layers; ++l) push_issue_blocks(cycle, lc.fwd[l]);
  if (last) push_issue_blocks(cycle, lc.last_fwd), push_issue_blocks(cycle, lc.last_bwd);
  for (int l = first_layer + layers - 1; l >= first_layer; --l) push_issue_blocks(cycle, lc.bwd[l]);
  if (first) push_issue_blocks(cycle, lc.first_bwd);
  return cycle;
}

CycleWaits stage_host_waits(const LayerCosts& lc, const ChunkLayers& chunks, int stage) {
  std::vector<IssueBlock> cycle;
  for (int k = 0; k < chunks.virtual_stages; ++k) {
    const int c = chunks.of(stage, k);
    const std::vector<IssueBlock> chunk =
        chunk_cycle(lc, chunks.first[c], chunks.len[c], chunks.has_embedding(c), chunks.has_head(c));
    cycle.insert(cycle.end(), chunk.begin(), chunk.end());
  }
  return host_waits_with_syncs(cycle);
}

void chain_host_syncs(const LayerCosts& lc, const ChunkLayers& chunks, std::vector<StageCosts>& st) {
  for (int s = 0; s < chunks.stages; ++s) {
    const CycleWaits w = stage_host_waits(lc, chunks, s);
    st[s].f.host_s = w.fluid_s + lc.sync_wait_s * w.syncs;
    st[s].b.host_s = 0;
  }
}

}  // namespace stepsim::plan::estimate
