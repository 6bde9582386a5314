#pragma once
// Tensor-parallel linear layers (Megatron's ColumnParallelLinear / RowParallelLinear, Transformer Engine's versions):
// the GEMMs of forward and backward with their TP collectives and, under userbuffers (training.tp_comm_overlap), the
// overlaps that hide them.
#include <string>
#include <vector>

#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

// A sequence-parallel all-gather of `bytes` over TP (the gathered size), followed under DTensor TP by its chunk + cat
// copy (FrameworkProfile::dtensor_tp).
Ref tp_all_gather(Emitter& em, const Context& cx, int64_t bytes, const std::string& name, Ref dep);
// A sequence-parallel reduce-scatter of `bytes` over TP (the unscattered size), preceded under DTensor TP by its
// chunk + cat copy.
Ref tp_reduce_scatter(Emitter& em, const Context& cx, int64_t bytes, const std::string& name, Ref dep);
// DTensor's chunk + cat of a whole [batch, sequence, hidden] tensor of `bytes` around a collective along the sequence
// dimension: reads and writes it once, named after the collective.
Ref sequence_chunk_cat(Emitter& em, const Context& cx, int64_t bytes, const std::string& coll_name, Ref dep);
// Weight gradient dW (k x n) = X^T dY over m tokens, accumulated into the fp32 main_grad buffer (Megatron's
// gradient-accumulation fusion): reads X and dY, reads and writes main_grad. Without the fusion the GEMM writes dW in
// the activation dtype and Megatron's gradient hook adds it into main_grad: a memory-bound kernel reading dW and
// main_grad and writing main_grad. Under torchtitan it writes dW in the parameter dtype, and AccumulateGrad adds it
// into .grad when there are several micro-batches. comm_sms: SMs a communication kernel running beside the GEMM holds.
Ref wgrad(Emitter& em, const Context& cx, int64_t k, int64_t n, int64_t m, const std::string& name,
          std::vector<Ref> deps = {}, int batch = 1, uint16_t comm_sms = 0);
// Backward of a column-parallel linear Y = X W (X: m x k, W: k x n local). `userbuffers` false for Megatron's own
// ColumnParallelLinear (the output layer), which TE's overlap does not cover.
Ref column_parallel_bwd(Emitter& em, const Context& cx, const std::string& name, int64_t m, int64_t n, int64_t k,
                        Ref in, bool input_sharded, bool userbuffers = true);
// A sequence-parallel all-gather feeding a column-parallel GEMM (qkv, fc1).
Ref gathered_gemm(Emitter& em, const Context& cx, const std::string& ag_name, Op g, const std::string& name, Ref in,
                  int64_t saved);
// A row-parallel GEMM (attention proj, fc2) whose output is reduce-scattered (all-reduced without SP).
Ref scattered_gemm(Emitter& em, const Context& cx, Op g, const std::string& name, Ref in, int64_t saved,
                   const std::string& reduce_name);
// A GEMM whose output of `bytes` is reduce-scattered over TP (all-reduced without SP), userbuffers-pipelined or not.
Ref reduced_gemm(Emitter& em, const Context& cx, Op g, const std::string& name, Ref in, int64_t saved, int64_t bytes,
                 const std::string& reduce_name, bool pipelined);
// Backward of a row-parallel GEMM: the output gradient all-gathered (under SP) for the dgrad and the wgrad GEMM.
Ref grad_gathered_gemms(Emitter& em, const Context& cx, const std::string& ag_name, Op dgrad,
                        const std::string& dgrad_name, int64_t wk, int64_t wn, const std::string& wgrad_name, Ref in);

}  // namespace stepsim::workload::megatron
