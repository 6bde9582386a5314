#pragma once
// CollectiveModel: time of one collective or point-to-point transfer once all members have arrived
// (the synchronisation stage is the engine's job).
#include <cstdint>
#include <memory>

#include "stepsim/cost/collective/collective_algorithm.hpp"
#include "stepsim/job/job_spec.hpp"
#include "stepsim/workload/group_geometry.hpp"
#include "stepsim/workload/op.hpp"

namespace stepsim::cost {

// The rank layout's description of a group (workload/group_geometry.hpp), by which collectives are timed.
using workload::GroupGeometry;
using workload::normalized;

class CollectiveModel {
 public:
  virtual ~CollectiveModel() = default;
  // bytes = message size S as nccl-tests defines it (all-gather: gathered output; reduce-scatter: input).
  virtual int64_t collective_ns(workload::CollType coll, uint64_t bytes, const GroupGeometry& g) const = 0;
  // One send/recv of `bytes` between two ranks, on the same node or across nodes.
  virtual int64_t p2p_ns(uint64_t bytes, bool same_node) const = 0;
  // The same in a communicator of `group_ranks` (nccl-tests' sendrecv: the whole world), for a model whose
  // point-to-point rate depends on it (NCCL gives a peer across the network fewer channels in a large one).
  virtual int64_t p2p_ns(uint64_t bytes, bool same_node, int group_ranks) const {
    (void)group_ranks;
    return p2p_ns(bytes, same_node);
  }
  // The channels such a send is striped over (1 where the model has no channels).
  virtual int p2p_channels(uint64_t bytes, bool same_node, int group_ranks) const {
    (void)bytes, (void)same_node, (void)group_ranks;
    return 1;
  }
  // The time with the algorithm/protocol the model assumed; `algo` forces an algorithm (Auto = the model's
  // choice) and `proto` a protocol (NCCL_ALGO / NCCL_PROTO). A model that cannot run the forced algorithm or
  // protocol for this collective throws InputError.
  virtual CollectiveEstimate estimate(workload::CollType coll, uint64_t bytes, const GroupGeometry& g,
                                      Algorithm algo = Algorithm::Auto,
                                      std::optional<Protocol> proto = std::nullopt) const;
};

// Alpha-beta model with NCCL's ring/tree step structure and hierarchical intra/inter-node bandwidth.
std::unique_ptr<CollectiveModel> make_alpha_beta_model(const spec::ClusterSpec& cluster);

}  // namespace stepsim::cost
