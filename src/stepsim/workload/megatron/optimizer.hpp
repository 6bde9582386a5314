#pragma once
// The optimizer step: Adam on the GPU over the rank's shard, or CPU optimizer offload (Megatron-LM's
// HybridDeviceOptimizer; DeepSpeed ZeRO-Offload; MoFa eq. 28).
#include <vector>

#include "stepsim/workload/megatron/emitter.hpp"

namespace stepsim::workload::megatron {

// Adam on the GPU over `params` of the shard (BytesPerParam::step_traffic bytes each); 16-bit gradients copied to
// fp32 for it hold memory while it runs.
Ref gpu_optimizer_step(Emitter& em, const Context& cx, int64_t params, const std::vector<Ref>& deps);
// The GPU's share of the shard first, then for the offloaded share: gradients to the host, the CPU's Adam, the updated
// weights back (one after the other, or pipelined under optimizer_offload_overlap).
Ref offloaded_optimizer_step(Emitter& em, const Context& cx, int64_t params, std::vector<Ref> deps);

}  // namespace stepsim::workload::megatron
