#include "stepsim/workload/megatron/linear.hpp"

namespace stepsim::workload::megatron {

Ref sequence_chunk_cat(Emitter& em, const Context& cx, int64_t bytes, const std::string& coll_name, Ref dep) {
  return em.compute(cx, memop(ComputeCategory::Elementwise, 2 * bytes), coll_name + "_chunk_cat", {dep});
}

Ref tp_all_gather(Emitter& em, const Context& cx, int64_t bytes, const std::string& name, Ref dep) {
  const Ref ag = em.coll(cx, CollType::AllGather, GroupKind::Tp, bytes, name, dep);
  if (!cx.f().profile.dtensor_tp) return ag;
  return sequence_chunk_cat(em, cx, bytes, name, ag);
}

Ref tp_reduce_scatter(Emitter& em, const Context& cx, int64_t bytes, const std::string& name, Ref dep) {
  if (cx.f().profile.dtensor_tp) dep = sequence_chunk_cat(em, cx, bytes, name, dep);
  return em.coll(cx, CollType::ReduceScatter, GroupKind::Tp, bytes, name, dep);
}

Ref wgrad(Emitter& em, const Context& cx, int64_t k, int64_t n, int64_t m, const std::string& name,
          std::vector<Ref> deps, int batch, uint16_t comm_sms) {
  const Features& f = cx.f();
  const int64_t beta = f.act_bytes;
  Op op = gemm(cx, k, n, m, batch);
  op.comm_sms = comm_sms;
  const int64_t out_bytes = f.grad_accum_fusion && !f.grads_in_param_dtype ? 2 * f.grad_bytes : beta;
  op.bytes = static_cast<uint64_t>((beta * (k * m + m * n) + out_bytes * k * n) * batch);
  if (!f.fp8_wgrad) op.keep_bf16 = true;
  Ref r = em.compute(cx.as_wgrad(), op, name, std::move(deps));
  if (f.grads_in_param_dtype) {
    if (cx.shape().microbatches > 1) {
      r = em.compute(cx, memop(ComputeCategory::Elementwise, 3 * beta * k * n * batch), name + "_accumulate_grad", {r});
    }
  } else if (!f.grad_accum_fusion) {
    r = em.compute(cx, memop(ComputeCategory::Elementwise, (beta + 2 * f.grad_bytes) * k * n * batch),
                   name + "_main_grad_add", {r});
  }
  return r;
}

// Under sequence parallelism the sharded input is all-gathered again for the weight gradient (overlapped with the
// input-gradient GEMM) and the input gradient is reduce-scattered (overlapped with the weight-gradient GEMM); without
// it the input gradient is all-reduced asynchronously. Returns the ref the next op must wait on.
Ref column_parallel_bwd(Emitter& em, const Context& cx, const std::string& name, int64_t m, int64_t n, int64_t k,
                        Ref in, bool input_sharded, bool userbuffers) {
  const Features& f = cx.f();
  // DTensor's linear saved the gathered input itself.
  const Ref regather =
      input_sharded && !f.profile.dtensor_tp
          ? em.coll(cx, CollType::AllGather, GroupKind::Tp, cx.beta() * m * k, name + "_input_all_gather", in)
          : Ref{};
  Op dgo = gemm(cx, m, k, n);
  if (f.tp_bulk_dgrad && userbuffers) dgo.comm_sms = f.profile.bulk_sms;  // the input all-gather beside the dgrad
  // tp_comm_overlap_rs_dgrad: the input gradient's reduce-scatter pipelined with the dgrad GEMM, as in the forward.
  const Ref r = reduced_gemm(em, cx, dgo, name + "_dgrad", in, 0, cx.beta() * m * k,
                             name + (cx.d().sp ? "_grad_reduce_scatter" : "_grad_all_reduce"),
                             f.tp_overlap_rs_dgrad && userbuffers);
  // bulk overlap: the dgrad reduce-scatter runs beside the wgrad GEMM
  wgrad(em, cx, k, n, m, name + "_wgrad", {regather}, 1, f.tp_bulk_wgrad && userbuffers ? f.profile.bulk_sms : uint16_t{0});
  return r;
}

// With userbuffers' ring exchange the GEMM works on each chunk as it arrives: both run together and what follows the
// GEMM waits for both.
Ref gathered_gemm(Emitter& em, const Context& cx, const std::string& ag_name, Op g, const std::string& name, Ref in,
                  int64_t saved) {
  const ModelDims& d = cx.d();
  if (!d.sp) return em.compute(cx, g, name, {in}, saved);
  const Ref ag = tp_all_gather(em, cx, cx.beta() * d.tokens * d.h, ag_name, in);
  if (cx.f().profile.dtensor_tp) return em.compute(cx, g, name, {ag}, saved * d.t);  // keeps the gathered input
  if (!cx.f().tp_overlap_ag) return em.compute(cx, g, name, {ag}, saved);
  g.comm_sms = cx.f().profile.ring_exchange_sms;
  const Ref r = em.compute(cx, g, name, {in}, saved);
  em.wait_at_next(ag);
  return r;
}

// With userbuffers' pipelined split the GEMM runs in chunks, each reduce-scattered while the next computes: only the
// last chunk's reduce-scatter is left after the GEMM.
Ref scattered_gemm(Emitter& em, const Context& cx, Op g, const std::string& name, Ref in, int64_t saved,
                   const std::string& reduce_name) {
  const ModelDims& d = cx.d();
  return reduced_gemm(em, cx, g, name, in, saved, cx.beta() * d.tokens * d.h, reduce_name, cx.f().tp_overlap_rs);
}

// `pipelined`: userbuffers' split, all but the last chunk's bytes beside the GEMM on more SMs, the last chunk after it.
Ref reduced_gemm(Emitter& em, const Context& cx, Op g, const std::string& name, Ref in, int64_t saved, int64_t bytes,
                 const std::string& reduce_name, bool pipelined) {
  if (!pipelined) {
    const Ref o = em.compute(cx, g, name, {in}, saved);
    if (!cx.d().sp) return em.coll(cx, CollType::AllReduce, GroupKind::Tp, bytes, reduce_name, o);
    return tp_reduce_scatter(em, cx, bytes, reduce_name, o);
  }
  const FrameworkProfile& ub = cx.f().profile;
  g.comm_sms = static_cast<uint16_t>(g.comm_sms + ub.pipeline_sms);
  em.coll(cx, CollType::ReduceScatter, GroupKind::Tp, bytes - bytes / ub.pipeline_splits, reduce_name, in);
  const Ref o = em.compute(cx, g, name, {in}, saved);
  return em.coll(cx, CollType::ReduceScatter, GroupKind::Tp, bytes / ub.pipeline_splits, reduce_name + "_last_chunk", o);
}

// With userbuffers' ring exchange the dgrad GEMM overlaps the all-gather; the wgrad waits.
Ref grad_gathered_gemms(Emitter& em, const Context& cx, const std::string& ag_name, Op dgrad,
                        const std::string& dgrad_name, int64_t wk, int64_t wn, const std::string& wgrad_name, Ref in) {
  const ModelDims& d = cx.d();
  const bool ring = cx.f().tp_overlap_ag;
  const Ref g = d.sp ? tp_all_gather(em, cx, cx.beta() * d.tokens * d.h, ag_name, in) : in;
  if (ring) dgrad.comm_sms = cx.f().profile.ring_exchange_sms;
  const Ref dg = em.compute(cx, dgrad, dgrad_name, {ring ? in : g});
  wgrad(em, cx, wk, wn, d.tokens, wgrad_name, {g});
  return dg;
}

}  // namespace stepsim::workload::megatron
