#include "stepsim/workload/megatron/unit_params.hpp"

namespace stepsim::workload::megatron {

namespace {
// An MTP depth's parameters besides its layer's: eh_proj, three norms (enorm, hnorm, its final norm), and with the
// first depth on a last stage that is not the first, a copy of the word embeddings (docs/MODEL.md).
int64_t mtp_extra_params(const Context& cx, int unit) {
  const ModelDims& d = cx.d();
  const int64_t embedding = (cx.shape().stage != 0 && unit == cx.shape().num_layers) ? d.vocab_pad * d.h / d.t : 0;
  return 2 * d.h * d.h / d.t + 3 * d.params_final_norm + embedding;  // a norm's parameters, as the final one's
}
}  // namespace

int64_t unit_params(const Context& cx, int unit, bool expert) {
  const ModelDims& d = cx.d();
  if (unit == kEmbeddingUnit) return expert ? 0 : d.params_embedding;
  if (unit == kHeadUnit) return expert ? 0 : d.params_output + d.params_final_norm;
  const bool moe = cx.job().model.is_moe_layer(unit);
  if (expert) return moe ? d.params_moe_experts : 0;
  return d.layer_params_dense(moe) + (cx.shape().mtp_unit(unit) ? mtp_extra_params(cx, unit) : 0);
}

// A transformer layer's linear weights, and its biases and norm weights/biases sharing the rest equally (MoE router
// and shared experts included); the embedding and output layer are one tensor each. Routed experts are gathered
// apart, on the expert-data-parallel group.
std::vector<int64_t> unit_tensors(const Context& cx, int unit) {
  const ModelDims& d = cx.d();
  const int64_t all = unit_params(cx, unit, false);
  if (unit == kEmbeddingUnit || unit == kHeadUnit) return {all};
  const auto& m = cx.job().model;
  const bool moe = m.is_moe_layer(unit);
  std::vector<int64_t> big;
  if (m.attention != spec::AttentionType::Mla) {
    big.push_back(d.h * (d.q_width + d.kv_width));  // linear_qkv
    big.push_back(d.attn_out_width * d.h);           // linear_proj
  }
  if (!moe) {
    big.push_back(d.h * d.ffn_in / d.t);  // linear_fc1
    big.push_back(d.ffn / d.t * d.h);     // linear_fc2
  }
  int64_t rest = all;
  for (int64_t b : big) rest -= b;
  // Norm weights (and LayerNorm biases) and linear biases hold the remainder.
  const int64_t norm_tensors = m.normalization == spec::Normalization::LayerNorm ? 4 : 2;
  const int64_t small = norm_tensors + (m.add_bias_linear ? 4 : 0);
  if (rest < small) return {all};
  for (int64_t k = 0; k < small; ++k) big.push_back(rest / small + (k < rest % small ? 1 : 0));
  return big;
}

int64_t sequence_parallel_params(const Context& cx, int layer) {
  const ModelDims& d = cx.d();
  const auto& m = cx.job().model;
  const bool moe = m.is_moe_layer(layer);
  int64_t p = d.params_norms;
  if (m.add_bias_linear) p += moe ? d.h : 2 * d.h;  // attention proj bias (+ fc2 bias of a dense MLP)
  if (moe) p += d.params_moe_router;
  if (m.attention == spec::AttentionType::Mla) {
    const auto& a = m.mla;
    p += d.h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;
    if (a.q_lora_rank > 0) p += d.h * a.q_lora_rank + a.q_lora_rank;
  }
  return p;
}

}  // namespace stepsim::workload::megatron
