#pragma once
// A pipeline stage's share of the probe: the layers of its model chunks, the embedding on the first stage and the
// head + loss on the last, with the parameters it holds and the activations it stores per micro-batch.
#include <vector>

#include "stepsim/plan/estimate/chunk_layers.hpp"
#include "stepsim/plan/estimate/zero_stream.hpp"
#include "stepsim/plan/plan_estimate.hpp"
#include "stepsim/workload/model_dims.hpp"

namespace stepsim::plan::estimate {

struct StageCosts {
  LayerCosts::Part f, b;  // one micro-batch's forward and backward over all the stage's chunks
  double stored = 0, dense = 0, expert = 0, bf16 = 0;  // bf16: parameters of layers fp8 jobs keep in bf16
  double zero_wait = 0;  // ZeRO-3: compute idle waiting for parameter gathers, per micro-batch (step / m)
  // ZeRO-2/3: the stage's data-parallel stream replay (all 0 otherwise). Its end_s bounds the stage's step where the
  // stream is the bottleneck, which the GPU's passes plus the waits (total) understate when the passes are
  // host-bound; its first and last passes' gather waits count in the pipeline's fill and drain.
  ZeroReplay zero;
  double total() const { return f.total() + b.total() + zero_wait; }
};

// The dense and expert parameters of one unit of gradients (a layer, the embedding, the head).
struct ParamSplit {
  double dense = 0, expert = 0;
};
ParamSplit layer_params(const spec::JobSpec& job, const workload::ModelDims& d, int layer);
double head_params(const workload::ModelDims& d);  // output layer and final norm

void add_part(LayerCosts::Part& a, const LayerCosts::Part& b);

// The parameters a stage holds (what its static memory is made of), without the probe.
struct StageParams {
  double dense = 0, expert = 0, bf16 = 0;
};
std::vector<StageParams> stage_params(const spec::JobSpec& job, const workload::ModelDims& d, const ChunkLayers& chunks);

std::vector<StageCosts> stage_costs(const spec::JobSpec& job, const LayerCosts& lc, const workload::ModelDims& d,
                                    const ChunkLayers& chunks);

// How long a pass takes beside the overlapped gradient buckets and parameter gathers: a host-bound pass (no host
// syncs) lasts as long as its host takes to issue it, and the data-parallel stream runs meanwhile.
double pass_wall(const LayerCosts& lc, const LayerCosts::Part& x);

}  // namespace stepsim::plan::estimate
