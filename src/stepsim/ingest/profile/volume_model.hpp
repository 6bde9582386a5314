#pragma once
// The theoretical per-rank communication volume of each parallelism type, thesis §2.4 (Borzyk 2026), as compared
// with measured volumes in its Table 5.1: DP gradient all-reduce (eq. 2.4, 2.6), TP all-reduces per layer
// (eq. 2.7), PP activations between adjacent stages (eq. 2.8-2.9), EP all-to-all token routing (eq. 2.11 per
// rank) and CP key/value all-gather + reduce-scatter (§2.4.4 gives no formula; derived from its description).
// Every volume is per rank for `iterations` training steps, in bytes.
#include <cstdint>
#include <map>
#include <string>

#include "stepsim/ingest/profile/parallelism_sizes.hpp"

namespace stepsim::profile {

struct ModelShape {
  int64_t layers = 0, hidden = 0, seq = 0, vocab = 0;  // l (L), h, s, V of §2.4
  int64_t micro_batch = 1;     // b
  int64_t micro_batches = 1;   // m: micro-batches per step through each pipeline
  int64_t iterations = 1;      // steps the log covers (Table 5.1: 10)
  int64_t dtype_bytes = 2;     // β
  int64_t params = 0;          // P; 0 = eq. 2.4 from l, h, V, s
  int64_t moe_layers = 0;      // MoE layers of the model (EP); 0 = dense
  int64_t topk = 1;            // k: experts per token
};

// "layers=16,hidden=512,seq=1024,vocab=50257,mbs=4,microbatches=16,bytes=2,iterations=10" applied over `base`;
// InputError naming --model, the key and the rule for a bad entry.
ModelShape parse_model_options(const std::string& text, ModelShape base = {});
// l, h, V, s, k and the MoE layer count from a Hugging Face config.json (spec/hf_config).
ModelShape model_from_hf_config(const std::string& path);
// The keys the formulas need: layers, hidden, seq, and vocab unless params is given.
void check_model(const ModelShape& m);

// P: the given count, else eq. 2.4 as printed, P = 12lh²(1 + 1/(12h) + (V+s)/(12lh²)) = 12lh² + lh + V + s.
double model_params(const ModelShape& m);

// Per-rank theoretical bytes for `iterations` steps, by type ("DP", "TP", "PP", "EP", "CP"); a dimension of
// size 1 (or not given) is absent. `rank` matters for PP only: edge stages have one neighbour, inner ones two.
std::map<std::string, double> model_volumes(const ModelShape& m, const ParallelismSizes& p, int rank);

}  // namespace stepsim::profile
