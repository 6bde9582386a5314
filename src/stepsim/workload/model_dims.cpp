#include "stepsim/workload/model_dims.hpp"

namespace stepsim::workload {

int64_t padded_vocab(int64_t vocab, int tensor) {
  const int64_t mult = int64_t{128} * tensor;
  return (vocab + mult - 1) / mult * mult;
}

namespace {

struct LayerParams {
  int64_t attention = 0, norms = 0, dense_mlp = 0, router = 0, experts_total = 0, shared = 0;
};

// Parameters of one layer sharded over t (experts over t as expert-tensor-parallel; experts_total counts
// all experts, the caller divides by the expert degree).
LayerParams layer_params(const spec::ModelSpec& m, int t) {
  LayerParams p;
  const int64_t h = m.hidden_size;
  const int64_t bias = m.add_bias_linear ? 1 : 0;
  const int64_t norm = m.normalization == spec::Normalization::LayerNorm ? 2 * h : h;
  p.norms = 2 * norm;
  if (m.attention == spec::AttentionType::Mla) {
    const auto& a = m.mla;
    const int64_t heads = m.num_attention_heads;
    const int64_t dqk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    int64_t q = 0;
    if (a.q_lora_rank > 0) {
      q = h * a.q_lora_rank + a.q_lora_rank /*q norm*/ + a.q_lora_rank * heads * dqk / t;
    } else {
      q = h * heads * dqk / t;
    }
    const int64_t kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank /*kv norm*/ +
                       a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim) / t;
    const int64_t proj = heads * a.v_head_dim * h / t + bias * h;
    p.attention = q + kv + proj;
  } else {
    const int64_t d = m.kv_channels;
    const int64_t qkv = (int64_t{m.num_attention_heads} + 2 * int64_t{m.num_query_groups}) * d;
    p.attention = h * qkv / t + bias * qkv / t + int64_t{m.num_attention_heads} * d * h / t + bias * h;
  }
  const int64_t gate = m.activation == spec::Activation::Swiglu ? 2 : 1;
  p.dense_mlp = h * gate * m.ffn_hidden_size / t + bias * gate * m.ffn_hidden_size / t + m.ffn_hidden_size * h / t +
                bias * h;
  if (m.moe) {
    const int64_t fe = m.moe->ffn_hidden_size;
    p.router = h * m.moe->num_experts;
    p.experts_total = int64_t{m.moe->num_experts} * (h * gate * fe / t + fe * h / t);
    const int64_t fs = m.moe->shared_expert_ffn_hidden_size;
    p.shared = fs > 0 ? h * gate * fs / t + fs * h / t : 0;
  }
  return p;
}

}  // namespace

ModelDims make_dims(const spec::JobSpec& job) {
  const auto& m = job.model;
  const auto& par = job.parallelism;
  ModelDims d;
  d.b = job.training.micro_batch_size;
  d.s = m.seq_length;
  d.t = par.tensor;
  d.c = par.context;
  d.e = par.expert;
  d.sp = par.sequence_parallel && par.tensor > 1;
  d.s_loc = d.s / d.c;
  d.tokens = d.b * d.s_loc;
  d.tokens_sp = d.sp ? d.tokens / d.t : d.tokens;
  d.h = m.hidden_size;
  d.act_bytes = spec::bytes_of(job.training.precision);

  d.heads_loc = m.num_attention_heads / d.t;
  if (m.attention == spec::AttentionType::Mla) {
    d.d_qk = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    d.d_v = m.mla.v_head_dim;
    d.kv_width = d.heads_loc * (d.d_qk + d.d_v);
  } else {
    d.d_qk = d.d_v = m.kv_channels;
    d.kv_width = int64_t{m.num_query_groups} / d.t * 2 * m.kv_channels;
  }
  d.q_width = d.heads_loc * d.d_qk;
  d.attn_out_width = d.heads_loc * d.d_v;
  d.ffn = m.ffn_hidden_size;
  d.ffn_in = m.activation == spec::Activation::Swiglu ? 2 * d.ffn : d.ffn;
  d.vocab_pad = padded_vocab(m.vocab_size, d.t);

  const LayerParams lp = layer_params(m, d.t);
  d.params_attention = lp.attention;
  d.params_norms = lp.norms;
  d.params_dense_mlp = lp.dense_mlp;
  d.params_moe_router = lp.router;
  // Routed experts are split over the expert-tensor group (MoE parallel folding: may differ from tensor).
  d.et = par.expert_tensor > 0 ? par.expert_tensor : par.tensor;
  d.params_moe_experts = (d.et == d.t ? lp.experts_total : layer_params(m, d.et).experts_total) / d.e;
  d.params_moe_shared = lp.shared;
  const int64_t norm = m.normalization == spec::Normalization::LayerNorm ? 2 * d.h : d.h;
  d.params_final_norm = norm;
  d.params_embedding = d.vocab_pad * d.h / d.t +
                       (m.position_embedding == spec::PositionEmbedding::Learned ? d.s * d.h : 0);
  // Megatron keeps a copy of tied output weights on the last stage when the pipeline has several stages.
  d.params_output = (m.tie_embeddings && par.pipeline == 1) ? 0 : d.vocab_pad * d.h / d.t;
  return d;
}

namespace {

// Whole-model parameters; `active`: each MoE layer's routed experts counted top-k of num_experts (what one token
// passes through).
int64_t model_parameters(const spec::ModelSpec& m, bool active) {
  const LayerParams lp = layer_params(m, 1);
  const int64_t h = m.hidden_size;
  const int64_t norm = m.normalization == spec::Normalization::LayerNorm ? 2 * h : h;
  const int64_t experts = !m.moe ? 0 : active ? lp.experts_total / m.moe->num_experts * m.moe->topk : lp.experts_total;
  auto layer = [&](int l) {
    return lp.attention + lp.norms + (m.is_moe_layer(l) ? lp.router + experts + lp.shared : lp.dense_mlp);
  };
  int64_t total = 0;
  for (int l = 0; l < m.num_layers; ++l) total += layer(l);
  // Multi-token prediction depths: a layer each (index num_layers + k), eh_proj 2h x h and three norms.
  for (int k = 0; k < m.mtp_layers; ++k) total += layer(m.num_layers + k) + 2 * h * h + 3 * norm;
  total += m.vocab_size * h;
  if (!m.tie_embeddings) total += m.vocab_size * h;
  if (m.position_embedding == spec::PositionEmbedding::Learned) total += m.seq_length * h;
  total += norm;  // the final norm
  return total;
}

}  // namespace

int64_t total_parameters(const spec::ModelSpec& m) { return model_parameters(m, false); }
int64_t active_parameters(const spec::ModelSpec& m) { return model_parameters(m, true); }

}  // namespace stepsim::workload
