#include "stepsim/workload/megatron/op_sac.hpp"

#include "stepsim/workload/megatron/linear.hpp"
#include "stepsim/workload/megatron/mlp.hpp"
#include "stepsim/workload/megatron/norms.hpp"
#include "stepsim/workload/megatron/qk_prep.hpp"

namespace stepsim::workload::megatron {

namespace {
int64_t v_width(const ModelDims& d) { return d.kv_width - k_width(d); }
}  // namespace

int64_t op_sac_saved_bytes(const Context& cx) {
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  int64_t bytes = beta * d.tokens_sp * d.h;                                        // the block's input
  bytes += beta * d.tokens * d.attn_out_width + 4 * d.b * d.heads_loc * d.s_loc;  // SDPA's output, logsumexp
  // wq, wv, w1 and w2's outputs. Under fp8 and torch.compile the policy's PREFER_RECOMPUTE is only a preference that
  // the partitioner weighs: torchtitan's compiled Float8 and MXFP8 runs peak within 1.5 % of their bf16 twin
  // (published_runs_blackwell.csv, TT-B200pl-*: 33.38-33.88 GB against 33.71 GB), so as much is kept.
  // Compiled, the partitioner saves only what the backward reads: w2's output, and under TP the reduce-scatter after
  // it, feed the residual add alone, whose backward reads nothing. Eager, the policy caches every MUST_SAVE output
  // whether the recompute asks for it or not.
  const bool compiled = cx.job().training.compile;
  if (!cx.f().fp8 || compiled) {
    bytes += beta * d.tokens * (d.q_width + v_width(d) + d.ffn / d.t + (compiled ? 0 : d.h));
  }
  if (d.sp) bytes += (compiled ? 1 : 2) * beta * d.tokens_sp * d.h;  // the reduce-scatters' outputs
  return bytes;
}

void op_sac_recompute(Emitter& em, const Context& outer, Ref grad) {
  const Context cx = outer.in(Phase::Recompute);
  const ModelDims& d = cx.d();
  const int64_t beta = cx.beta();
  const bool fp8 = cx.f().fp8;
  auto gathered = [&](Ref n, const char* name) {
    return d.sp ? tp_all_gather(em, cx, beta * d.tokens * d.h, name, n) : n;
  };
  Ref x = gathered(norm_fwd(em, cx, "attention_norm_recompute", grad), "attention_input_all_gather_recompute");
  const int64_t qkv = fp8 ? d.q_width + d.kv_width : k_width(d);
  Ref p = em.compute(cx.storing_outputs(), gemm(cx, d.tokens, qkv, d.h), fp8 ? "wqkv_recompute" : "wk_recompute", {x},
                     beta * d.tokens * qkv);
  p = qk_prep_fwd(em, cx, p);
  // Under TP the output projection's reduce-scatter result is saved, so wo need not re-run.
  if (!d.sp) p = em.compute(cx, gemm(cx, d.tokens, d.h, d.attn_out_width), "wo_recompute", {p});
  const Ref h = bias_dropout_add_fwd(em, cx, "attention_residual_add_recompute", {p});
  x = gathered(norm_fwd(em, cx, "ffn_norm_recompute", h), "ffn_input_all_gather_recompute");
  const int64_t up = (fp8 ? 2 : 1) * d.ffn / d.t;
  Ref u = em.compute(cx.storing_outputs(), gemm(cx, d.tokens, up, d.h), fp8 ? "w1_w3_recompute" : "w3_recompute", {x},
                     beta * d.tokens * up);
  activation_fwd(em, cx, u, beta * d.tokens * d.ffn / d.t);
}

}  // namespace stepsim::workload::megatron
