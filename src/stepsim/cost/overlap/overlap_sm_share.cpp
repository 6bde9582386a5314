// SM-share overlap model: the formula of overlap_sm_share.hpp.
#include "stepsim/cost/overlap/overlap_sm_share.hpp"

#include <algorithm>

namespace stepsim::cost {
namespace {

class SmShareOverlapModel final : public OverlapModel {
 public:
  explicit SmShareOverlapModel(const SmShareParams& p) : p_(p) {}

  double compute_slowdown(const OverlapCompute& compute, std::span<const OverlapComm> comms) const override {
    double held = 0;
    for (const OverlapComm& c : comms) {
      // A kernel running beside userbuffers' TP communication already runs on the SMs those leave (Op::comm_sms,
      // the roofline model's share): its TP collectives are not counted twice.
      if (compute.comm_sms > 0 && c.group == workload::GroupKind::Tp) continue;
      if (c.kind == workload::OpKind::P2P) held += p_.p2p_channels;
      else held += c.channels > 0 ? c.channels : p_.collective_channels;
    }
    const double sms = std::max(p_.sm_count, 1);
    // However many kernels are in flight, the compute kernel keeps a quarter of the GPU (NCCL's channels are capped
    // well below the SM count; several communicators' kernels in flight at once do not all hold their SMs at once).
    held = std::min(held, 0.75 * sms);
    return held / (sms - held);
  }

 private:
  SmShareParams p_;
};

}  // namespace

std::unique_ptr<OverlapModel> make_sm_share_overlap_model(const SmShareParams& p) {
  return std::make_unique<SmShareOverlapModel>(p);
}

}  // namespace stepsim::cost
