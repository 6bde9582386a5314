#pragma once
// ModelDims: per-rank tensor dimensions of one micro-batch under a parallel plan, and per-rank parameter
// counts of each module (docs/MODEL.md gives every formula). Shared by the workload builder and the
// analytic memory model so both use one set of numbers.
#include <algorithm>
#include <cstdint>

#include "stepsim/job/job_spec.hpp"

namespace stepsim::workload {

struct ModelDims {
  // Sizes.
  int64_t b = 1;          // micro-batch size
  int64_t s = 0;          // full sequence length
  int64_t s_loc = 0;      // sequence on this rank: s / context
  int64_t tokens = 0;     // T = b * s_loc: tokens a rank computes attention/MLP GEMMs on
  int64_t tokens_sp = 0;  // tokens held between TP regions: T / t under sequence parallelism, else T
  int64_t h = 0;
  int t = 1, c = 1, e = 1;
  int et = 1;             // expert tensor parallel size
  bool sp = false;
  int64_t act_bytes = 2;  // bytes per activation element
  // Attention.
  int64_t heads_loc = 0;      // heads / t
  int64_t d_qk = 0, d_v = 0;  // per-head dims of query/key and value
  int64_t q_width = 0;        // local Q width: heads_loc * d_qk
  int64_t kv_width = 0;       // local K+V width after projection: (kv heads or heads)_loc * (d_qk + d_v)
  int64_t attn_out_width = 0; // local attention output width: heads_loc * d_v
  // MLP.
  int64_t ffn = 0;      // dense intermediate size
  int64_t ffn_in = 0;   // fc1 output width (2*ffn for gated SwiGLU)
  int64_t vocab_pad = 0;

  // Parameters on one rank (TP-sharded where Megatron shards them).
  int64_t params_attention = 0;   // attention projections (+ MLA down-projections and their norms)
  int64_t params_norms = 0;       // the layer's two norms
  int64_t params_dense_mlp = 0;
  int64_t params_moe_router = 0;
  int64_t params_moe_experts = 0; // local experts (E/e of them), expert-data-parallel
  int64_t params_moe_shared = 0;
  int64_t params_embedding = 0;   // word (+ learned position) embeddings on the first stage
  int64_t params_output = 0;      // output layer on the last stage (0 when tied and pipeline == 1)
  int64_t params_final_norm = 0;

  int64_t layer_params_dense(bool moe_layer) const {
    return params_attention + params_norms + (moe_layer ? params_moe_router + params_moe_shared : params_dense_mlp);
  }
  // A layer's parameters on this rank, routed experts included.
  int64_t layer_params(bool moe_layer) const { return layer_params_dense(moe_layer) + (moe_layer ? params_moe_experts : 0); }
  // Parameters fp8 training keeps in bf16 on a stage (no fp8 weight copies): the word embeddings on the first, the
  // output layer on the last, and `bf16_layers` of its transformer layers (fp8_bf16_first/last_layers).
  int64_t fp8_exempt_params(bool first_stage, bool last_stage, int64_t bf16_layers) const {
    return (first_stage ? params_embedding : 0) + (last_stage ? params_output : 0) + bf16_layers;
  }
  // Parameters outside the transformer layers on a stage: the embedding on the first, final norm and output on the
  // last.
  int64_t root_params(bool first_stage, bool last_stage) const {
    return (first_stage ? params_embedding : 0) + (last_stage ? params_output + params_final_norm : 0);
  }
  // What the last stage holds after its transformer layers: the final norm and the output layer.
  int64_t head_params(bool last_stage) const { return last_stage ? params_output + params_final_norm : 0; }
  int64_t largest_layer_params(bool moe_model) const {
    return std::max(layer_params(false), moe_model ? layer_params(true) : int64_t{0});
  }
};

ModelDims make_dims(const spec::JobSpec& job);

// Megatron pads the vocabulary to a multiple of 128 * tensor.
int64_t padded_vocab(int64_t vocab, int tensor);

// Total parameters of the whole model (no parallelism), counting tied embeddings once.
int64_t total_parameters(const spec::ModelSpec& m);
// Parameters one token passes through: each MoE layer's routed experts counted top-k of the experts.
int64_t active_parameters(const spec::ModelSpec& m);

}  // namespace stepsim::workload
