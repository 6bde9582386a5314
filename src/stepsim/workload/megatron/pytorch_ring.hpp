#pragma once
// Ring attention as PyTorch's context parallelism runs it (torch.distributed.tensor.experimental, which torchtitan's
// CP uses; docs/MODEL.md §12b): the load-balanced ring of SDPA calls with the bookkeeping Transformer Engine's ring
// does not have. K/V (expanded to every query head where the model repeats them before SDPA) are all-gathered once per
// pass ('allgather', torchtitan's default rotate method); every step but the first merges its output into an fp32
// running output by the logsumexps; backward accumulates dQ/dK/dV in fp32 and passes dK/dV on in fp32.
#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

// As cp_attention_fwd / cp_attention_bwd (context_parallel.hpp), for a framework profile with pytorch_ring set.
Ref pytorch_ring_fwd(Emitter& em, const Context& cx, Ref qkv, double flops, int64_t bytes, int64_t saved);
Ref pytorch_ring_bwd(Emitter& em, const Context& cx, Ref dout, double flops, int64_t bytes);

}  // namespace stepsim::workload::megatron
