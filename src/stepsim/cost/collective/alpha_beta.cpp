// Alpha-beta collective model with NCCL's ring/tree step structure and a hierarchical (intra-node NVLink,
// inter-node NIC) bottleneck bandwidth. Formulas and their justification: docs/COST-MODELS.md.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "stepsim/cost/collective/collective_model.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/job/cluster_rates.hpp"

namespace stepsim::cost {
namespace {

using workload::CollType;

struct Geometry {
  double n;  // ranks
  double N;  // nodes
  double k;  // ranks on the busiest node
};

Geometry normalize(const GroupGeometry& geometry) {
  const GroupGeometry g = normalized(geometry);
  return {static_cast<double>(g.ranks), static_cast<double>(g.nodes), static_cast<double>(g.ranks_per_node)};
}

class AlphaBetaModel final : public CollectiveModel {
 public:
  explicit AlphaBetaModel(const spec::ClusterSpec& c)
      : bw_intra_(c.intra_node.bandwidth_GBps * 1e9),
        bw_nic_(spec::inter_node_GBps_per_gpu(c) * 1e9),
        lat_intra_(c.intra_node.latency_us * 1e-6),
        lat_inter_(c.inter_node.latency_us * 1e-6) {
    check(c.intra_node.bandwidth_GBps, true, "cluster.intra_node.bandwidth_GBps");
    // The job file gives the NIC rate in Gb/s (the loader divides by 8): report it in the user's unit.
    check(c.inter_node.bandwidth_GBps * 8, true, "cluster.inter_node.bandwidth_Gbps");
    check(c.intra_node.latency_us, false, "cluster.intra_node.latency_us");
    check(c.inter_node.latency_us, false, "cluster.inter_node.latency_us");
  }

  int64_t collective_ns(CollType coll, uint64_t bytes, const GroupGeometry& geometry) const override {
    if (geometry.ranks <= 1 || bytes == 0) return 0;  // nothing moves; NCCL returns at once for count 0
    // A ring exchange: every member's send/recv at once, each over its own link; the slowest hop sets the time.
    if (coll == CollType::SendRecv) return p2p_ns(bytes, geometry.nodes <= 1);
    const Geometry g = normalize(geometry);
    const double S = static_cast<double>(bytes);
    double t = 0;
    switch (coll) {
      case CollType::AllReduce:
        // NCCL picks the faster algorithm per call; tree wins on latency for small messages across nodes.
        t = std::min(ring_allreduce(S, g), tree_allreduce(S, g));
        break;
      case CollType::AllGather:
      case CollType::ReduceScatter:
        t = ring_latency(g.n - 1, g.N - 1) + (g.n - 1) / g.n * S / ring_bandwidth(g);
        break;
      case CollType::AllToAll:
        t = alltoall(S, g);
        break;
      case CollType::SendRecv: break;  // returned above
      case CollType::Broadcast:
      case CollType::Reduce:
        // Pipelined chain: the message streams through n-1 hops; bandwidth term S once.
        t = ring_latency(g.n - 1, g.N - 1) + S / ring_bandwidth(g);
        break;
    }
    return to_ns(t);
  }

  CollectiveEstimate estimate(CollType coll, uint64_t bytes, const GroupGeometry& geometry, Algorithm algo,
                              std::optional<Protocol> proto) const override {
    require_simple_protocol(proto, "alpha-beta");
    const bool ar = coll == CollType::AllReduce;
    if (algo != Algorithm::Auto && algo != Algorithm::Ring && !(ar && algo == Algorithm::Tree)) {
      throw InputError(std::string("--algo ") + name_of(algo) + ": the alpha-beta model has ring" +
                       (ar ? " and tree" : "") + " for " + workload::name_of(coll));
    }
    CollectiveEstimate e{collective_ns(coll, bytes, geometry),
                         coll == CollType::AllToAll ? Algorithm::Direct : Algorithm::Ring, Protocol::Simple, 0};
    if (ar && geometry.ranks > 1 && bytes > 0) {
      const Geometry g = normalize(geometry);
      const double S = static_cast<double>(bytes);
      const double ring = ring_allreduce(S, g), tree = tree_allreduce(S, g);
      const bool use_tree = algo == Algorithm::Tree || (algo == Algorithm::Auto && tree < ring);
      e.ns = to_ns(use_tree ? tree : ring);
      e.algorithm = use_tree ? Algorithm::Tree : Algorithm::Ring;
    }
    return e;
  }

  int64_t p2p_ns(uint64_t bytes, bool same_node) const override {
    if (bytes == 0) return 0;
    const double S = static_cast<double>(bytes);
    return to_ns(same_node ? lat_intra_ + S / bw_intra_ : lat_inter_ + S / bw_nic_);
  }

 private:
  static void check(double v, bool positive, const char* key) {
    if (!std::isfinite(v) || v < 0 || (positive && v == 0))
      throw InputError(std::string(key) + ": must be " + (positive ? "> 0" : ">= 0") + ", got " +
                       std::to_string(v));
  }

  static int64_t to_ns(double seconds) { return std::max<int64_t>(1, std::llround(seconds * 1e9)); }

  // Per-rank bus bandwidth of a ring (and of the trees, which share its bottleneck). On one node every hop is
  // NVLink. Across nodes NCCL builds one ring per NIC, so the k ranks of a node push the inter-node share through
  // k NICs in parallel: bus bandwidth = min(NVLink, k x NIC), the aggregate NIC rate of the node's ranks.
  double ring_bandwidth(const Geometry& g) const {
    return g.N <= 1 ? bw_intra_ : std::min(bw_intra_, g.k * bw_nic_);
  }

  // NCCL's ring latency: of `steps` steps, `inter_steps` cross a node boundary (tuning.cc:
  // (nsteps - nInterSteps) * intraLat + nInterSteps * interLat).
  double ring_latency(double steps, double inter_steps) const {
    return (steps - inter_steps) * lat_intra_ + inter_steps * lat_inter_;
  }

  double ring_allreduce(double S, const Geometry& g) const {
    return ring_latency(2 * (g.n - 1), 2 * (g.N - 1)) + 2 * (g.n - 1) / g.n * S / ring_bandwidth(g);
  }

  // Chain inside each node, double binary tree across nodes, reduce up then broadcast down:
  // 2 * ((k-1) intra hops + ceil(log2 N) inter hops) latency; each phase moves S through the bottleneck.
  double tree_allreduce(double S, const Geometry& g) const {
    const double depth = g.N > 1 ? std::ceil(std::log2(g.N)) : 0.0;
    return 2 * ((g.k - 1) * lat_intra_ + depth * lat_inter_) + 2 * S / ring_bandwidth(g);
  }

  // Each rank sends S/n to each of the n-1 others: (k-1) shares over NVLink, (n-k) over its own NIC. The two
  // links work concurrently, so the slower side sets the time; NCCL posts the peers round by round, one
  // latency per peer.
  double alltoall(double S, const Geometry& g) const {
    const double intra = S * (g.k - 1) / g.n / bw_intra_;
    const double inter = S * (g.n - g.k) / g.n / bw_nic_;
    return (g.k - 1) * lat_intra_ + (g.n - g.k) * lat_inter_ + std::max(intra, inter);
  }

  double bw_intra_, bw_nic_;    // B/s per GPU, one direction
  double lat_intra_, lat_inter_;  // s per step
};

}  // namespace

std::unique_ptr<CollectiveModel> make_alpha_beta_model(const spec::ClusterSpec& cluster) {
  return std::make_unique<AlphaBetaModel>(cluster);
}

}  // namespace stepsim::cost
