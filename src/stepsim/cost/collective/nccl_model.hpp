#pragma once
// White-box NCCL collective model (Echo §5, eq. 1-5): once every member has arrived (the engine's
// synchronisation stage), a collective costs connection setup alpha, eta rounds of chunk transmission over
// intra-node (beta) and inter-node (gamma) hops, and delta per reduced byte. Algorithm, protocol and channels are
// chosen by NCCL's own tuner (nccl_tuner.hpp); chunk sizes and eta follow NCCL's buffer/step rules.
#include <array>
#include <cstdint>
#include <memory>

#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/catalog/nccl_params.hpp"
#include "stepsim/cost/collective/nccl_tuner.hpp"
#include "stepsim/catalog/catalog.hpp"

namespace stepsim::cost {

// What the model knows about the hardware of one cluster.
struct NcclHardware {
  TunerTopology tuner;      // cc, nvls, nvlink_intra, ll128, channels (ranks/nodes filled per call)
  double intra_GBps = 450;  // nominal intra-node bandwidth per GPU, one direction
  double nic_GBps = 50;     // nominal NIC bandwidth per GPU, one direction
  double nvls_efficiency = 0;  // achieved NVLS port efficiency (NcclProfile::nvls_efficiency); 0 = NCCL's constant
  double net_latency_scale = 1;  // the inter-node transport's per-step latency over InfiniBand's (gamma's multiplier)
  double simple_chunk_scale = 1;  // NCCL_BUFFSIZE over NCCL's 4 MiB: the Simple protocol's chunks scale with it
  int net_peer_channels = 4;      // p2p channels NCCL gives a peer across the network before any halving
  int lone_gpu_channels = 4;      // channels of a communicator with one GPU per node (lone_gpu_channels)
  const NcclTunerTable* constants = nullptr;  // NCCL's tuning constants (the catalog's; outlives the hardware)
};
// The hardware of `cluster` as NCCL sees it: the GPU's architecture and links from `catalog`'s GPUs, its tuning
// constants and the transport's latency from `catalog` (which must outlive the result).
NcclHardware nccl_hardware(const catalog::Catalog& catalog, const spec::ClusterSpec& cluster, int channels,
                           double nvls_efficiency = 0);

// The linear decomposition of one collective's time: time_us = sum x[i] * theta[i] with
// theta = {alpha_us, beta_us, gamma_us, 1/intra_efficiency, 1/inter_efficiency, 1/reduce_GBps}.
struct NcclTerms {
  std::array<double, 6> x{};
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  int channels = 1;
  int64_t eta = 1;           // rounds of chunks
  uint64_t chunk_bytes = 0;  // bytes per chunk step per channel
};
constexpr int kNcclParamCount = 6;
std::array<double, kNcclParamCount> theta_of(const NcclParams& p);
NcclParams params_of(const std::array<double, kNcclParamCount>& theta, const NcclParams& base);
double time_us(const NcclTerms& t, const NcclParams& p);

// Terms of a collective over geometry g; `force` pins the algorithm (Auto = NCCL's tuner choice) and `proto` the
// protocol (NCCL_PROTO; empty = the tuner's choice).
NcclTerms nccl_terms(const NcclHardware& hw, workload::CollType coll, uint64_t bytes, const GroupGeometry& g,
                     Algorithm force = Algorithm::Auto, std::optional<Protocol> proto = std::nullopt);
// Terms of one send/recv (NCCL's P2P path: one chunked flow over NVLink/PCIe or the NIC). `group_ranks`: the
// communicator's size where known (0: not), which sets how many channels a peer across the network gets.
NcclTerms nccl_p2p_terms(const NcclHardware& hw, uint64_t bytes, bool same_node, int group_ranks = 0);
// The channels NCCL stripes one send of `bytes` to a peer across the network over, in a communicator of
// `group_ranks` (0: unknown, no halving) (src/graph/paths.cc, src/enqueue.cc).
int p2p_net_channels(const NcclHardware& hw, uint64_t bytes, int group_ranks);

// The model with the given parameters (profile defaults, calibrations). `nccl_version` ("" = the tuner table's own,
// else e.g. "2.21.5") picks NCCL's tuning constants of that release (NcclTunerTable::for_version).
std::unique_ptr<CollectiveModel> make_nccl_model(const catalog::Catalog& catalog, const spec::ClusterSpec& cluster,
                                                 const NcclProfile& profile, NcclParamTable table,
                                                 const std::string& nccl_version = "");
// The model for a cluster with its GPU's profile in the catalog (data/nccl.yaml: defaults and shipped bands).
std::unique_ptr<CollectiveModel> make_nccl_model(const catalog::Catalog& catalog, const spec::ClusterSpec& cluster,
                                                 const std::string& nccl_version = "");

}  // namespace stepsim::cost
