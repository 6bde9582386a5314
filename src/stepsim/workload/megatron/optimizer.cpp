#include "stepsim/workload/megatron/optimizer.hpp"

#include <cmath>

#include "stepsim/workload/optimizer_offload.hpp"
#include "stepsim/workload/static_memory.hpp"

namespace stepsim::workload::megatron {

Ref gpu_optimizer_step(Emitter& em, const Context& cx, int64_t params, const std::vector<Ref>& deps) {
  const BytesPerParam bpp = bytes_per_param(cx.job().training);
  const Ref r = em.compute(cx, memop(ComputeCategory::Optimizer, params * bpp.step_traffic), "optimizer_step", deps);
  em.alloc_at_last(params * bpp.step_grad_copy);
  em.release_at_last(params * bpp.step_grad_copy);
  return r;
}

// Megatron launches the GPU's share before the CPU work. Without optimizer_offload_overlap the three parts of the
// offloaded share run one after the other (Megatron's default; MoFa's sum). With it Megatron pipelines them tensor by
// tensor on separate copy streams: modelled as kOffloadChunks equal chunks, every gradient copy queued first as
// Megatron does. The CPU step occupies the compute stream: the host thread that launches kernels is busy with it.
Ref offloaded_optimizer_step(Emitter& em, const Context& cx, int64_t params, std::vector<Ref> deps) {
  const auto& tr = cx.job().training;
  const int64_t host = std::llround(static_cast<double>(params) * tr.optimizer_offload_fraction);
  if (params - host > 0) gpu_optimizer_step(em, cx, params - host, deps);
  const int chunks = tr.optimizer_offload_overlap ? kOffloadChunks : 1;
  auto share = [&](int c) { return host * (c + 1) / chunks - host * c / chunks; };
  std::vector<Ref> to_host;
  for (int c = 0; c < chunks; ++c) {
    to_host.push_back(em.host_side(cx, ComputeCategory::Offload, Stream::Memcpy, share(c) * kOffloadCopyBytesPerParam,
                                   "optimizer_grad_to_host", deps));
  }
  Ref last = em.last(Stream::Compute);
  for (int c = 0; c < chunks; ++c) {
    const Ref step = em.host_side(cx, ComputeCategory::CpuOptimizer, Stream::Compute, share(c) * kCpuAdamBytesPerParam,
                                  "cpu_optimizer_step", {to_host[static_cast<size_t>(c)]});
    last = em.host_side(cx, ComputeCategory::Offload, Stream::Memcpy, share(c) * kOffloadCopyBytesPerParam,
                        "optimizer_params_to_device", {step});
  }
  return last;
}

}  // namespace stepsim::workload::megatron
