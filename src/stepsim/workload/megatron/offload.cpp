#include "stepsim/workload/megatron/offload.hpp"

namespace stepsim::workload::megatron {

int64_t SavedActivations::key(int microbatch, int unit) { return int64_t{microbatch} * (kHeadUnit + 2) + unit + 1; }

int64_t SavedActivations::peek(int microbatch, int unit) const {
  const auto it = bytes_.find(key(microbatch, unit));
  return it == bytes_.end() ? 0 : it->second;
}

int64_t SavedActivations::take(int microbatch, int unit) {
  auto it = bytes_.find(key(microbatch, unit));
  if (it == bytes_.end()) return 0;
  const int64_t v = it->second;
  bytes_.erase(it);
  return v;
}

void ActivationOffload::before_forward(Emitter& em, const Context& cx, int unit) {
  const int n = cx.job().training.activation_offload_layers, L = cx.job().model.num_layers;
  if (n == 0 || unit < L - n || unit >= L) return;
  const auto it = copy_.find(SavedActivations::key(cx.at.microbatch, unit - (L - n)));
  if (it != copy_.end()) em.wait_at_next(it->second);
}

void ActivationOffload::after_forward(Emitter& em, const Context& cx, int unit) {
  if (unit < 0 || unit >= cx.job().training.activation_offload_layers || em.unit_saved() == 0) return;
  copy_[SavedActivations::key(cx.at.microbatch, unit)] =
      em.host_side(cx, ComputeCategory::Offload, Stream::Memcpy, em.unit_saved(), "activation_offload",
                   {em.last(Stream::Compute)});
  em.release_at_last(em.unit_saved());
}

void ActivationOffload::before_backward(Emitter& em, const Context& cx, int unit, const SavedActivations& saved) {
  const int n = cx.job().training.activation_offload_layers, L = cx.job().model.num_layers;
  if (n == 0 || unit < 0 || unit >= L) return;
  const int mb = cx.at.microbatch;
  const int reload = unit - (L - 1 - n);
  if (reload >= 0 && reload < n) {
    const int64_t bytes = saved.peek(mb, reload);
    const int64_t k = SavedActivations::key(mb, reload);
    if (bytes > 0 && copy_.count(k)) {
      // tagged with the layer it brings back
      copy_[k] = em.host_side(cx.on_layer(reload), ComputeCategory::Offload, Stream::Memcpy, bytes, "activation_reload",
                              {em.last(Stream::Compute)});
      em.alloc_at_last(bytes);
    }
  }
  if (unit < n) {
    if (auto it = copy_.find(SavedActivations::key(mb, unit)); it != copy_.end()) {
      em.wait_at_next(it->second);
      copy_.erase(it);
    }
  }
}

}  // namespace stepsim::workload::megatron
