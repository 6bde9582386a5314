// NCCL's tuner (ncclTopoTuneModel, src/graph/tuning.cc): the formulas, with every constant from data/nccl-tuner.yaml
// (NCCL 2.30.7, quoted in shared/data/nccl_model_facts.md; the section is named beside each use).
#include "stepsim/cost/collective/nccl_tuner.hpp"
#include "stepsim/catalog/nccl_tuner_table.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "stepsim/io/input_error.hpp"

namespace stepsim::cost {
namespace {

using workload::CollType;

// Algorithm rows in NCCL's index order (TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT);
// CollNet needs in-network reduction (SHARP): only with cluster.network.sharp.
int algo_index(Algorithm a) {
  switch (a) {
    case Algorithm::Tree: return 0;
    case Algorithm::Ring: return 1;
    case Algorithm::CollNetDirect: return 2;
    case Algorithm::CollNetChain: return 3;
    case Algorithm::Nvls: return 4;
    case Algorithm::NvlsTree: return 5;
    case Algorithm::Pat: return 6;
    default: return 1;
  }
}
int proto_index(Protocol p) { return static_cast<int>(p); }

int node_column(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }

int nsteps(CollType c, int n) {
  switch (c) {
    case CollType::AllReduce: return 2 * (n - 1);
    case CollType::AllGather:
    case CollType::ReduceScatter: return n - 1;
    default: return n;  // broadcast, reduce
  }
}

// NVLS (NVSwitch multicast, and NVLS-tree across nodes) as NCCL enables it: a Hopper or later NVSwitch node, at least
// two channels, and more than two of the communicator's GPUs on the node (ncclNvlsInit returns with NVLS off when
// ncclTopoGetGpuCount gives 2 or fewer).
bool nvls_enabled(const TunerTopology& t) { return t.nvls && t.ranks_per_node > 2 && t.channels >= 2; }

bool supported(CollType c, Algorithm a, Protocol p, const TunerTopology& t) {
  if (p != Protocol::Simple && a != Algorithm::Ring && a != Algorithm::Tree) return false;
  if (p == Protocol::LL128 && !t.ll128) return false;
  switch (c) {
    case CollType::Broadcast:
    case CollType::Reduce: return a == Algorithm::Ring;
    case CollType::AllGather:
    case CollType::ReduceScatter:
      if (a == Algorithm::Ring) return true;
      if (a == Algorithm::Pat) return t.ranks_per_node == 1 && t.nodes > 1;
      // NVLS all-gather/reduce-scatter across nodes needs CollNet heads, which we never have.
      if (a == Algorithm::Nvls) return nvls_enabled(t) && t.nodes == 1;
      return false;
    case CollType::AllReduce:
      if (a == Algorithm::Ring || a == Algorithm::Tree) return true;
      // NVLS across nodes needs the fabric to reduce too (SHARP); without it NCCL runs NVLS-tree.
      if (a == Algorithm::Nvls) return nvls_enabled(t) && (t.nodes == 1 || t.collnet);
      if (a == Algorithm::CollNetDirect) return t.collnet && t.nodes > 1 && t.nvswitch;
      if (a == Algorithm::CollNetChain) return t.collnet && t.nodes > 1;
      if (a == Algorithm::NvlsTree) return nvls_enabled(t) && t.nodes > 1;
      return false;
    default: return false;
  }
}

}  // namespace

double nccl_base_latency_us(const NcclTunerTable& k, Algorithm a, Protocol p) {
  return k.base_latency_us[algo_index(a)][proto_index(p)];
}
double nccl_hw_latency_us(const NcclTunerTable& k, HwLink hw, Algorithm a, Protocol p) {
  return k.hw_latency_us[static_cast<int>(hw)][algo_index(a)][proto_index(p)];
}
double nvls_efficiency(const NcclTunerTable& k, CompCap cc) { return k.nvls_efficiency[static_cast<int>(cc)]; }

TunerCell tuner_cell(const NcclTunerTable& k, CollType coll, Algorithm a, Protocol p, const TunerTopology& t) {
  if (!supported(coll, a, p, t)) return {};
  const int n = std::max(1, t.ranks), nodes = std::max(1, t.nodes), ppn = std::max(1, t.ranks_per_node);
  const int cc = static_cast<int>(t.cc), col = node_column(nodes), ai = algo_index(a), pi = proto_index(p);
  const int nCh = std::max(1, t.channels);
  const int steps = nsteps(coll, n);
  // Ring and tree channels pass through every GPU of a node over NVLink/PCI, so NCCL's graph search never gives
  // them an inter-node speed the intra-node paths cannot carry (ncclTopoCompute searches one speed for both: a
  // ring graph's bwIntra = bwInter). The tuner takes bwIntra on 1-2 nodes, bwInter beyond; a tree graph's search then
  // raises bwIntra up to twice bwInter ("increase bwIntra for trees (2 nodes or collnet)", graph/search.cc), which is
  // why NCCL picks the tree on two nodes and its busbw there can reach twice the NICs'.
  const bool collnet = a == Algorithm::CollNetDirect || a == Algorithm::CollNetChain;
  const double graph = nodes == 1 ? t.bw_intra : ppn > 1 ? std::min(t.bw_inter, t.bw_intra) : t.bw_inter;
  double bw = collnet ? t.bw_intra : graph;
  if (nodes == 2 && a == Algorithm::Tree) bw = ppn > 1 ? std::min(t.bw_intra, 2 * graph) : 2 * graph;

  // --- bus bandwidth (§5.2-5.3)
  double busBw = nCh * bw;
  if (a == Algorithm::Nvls || a == Algorithm::NvlsTree) {
    const double eff = k.nvls_efficiency[cc];
    double intra = t.bw_intra * nCh * eff * (nCh - 1) / nCh;  // NVLS uses the whole NVSwitch port
    intra *= coll == CollType::AllReduce ? 2.0 : static_cast<double>(ppn - 1) / ppn;
    busBw = intra;
    if (nodes > 1) {
      double inter = t.bw_inter * nCh;
      if (a == Algorithm::NvlsTree && nodes <= 2) inter *= 2;
      busBw = std::min(busBw, inter);
      if (a == Algorithm::NvlsTree) busBw = std::min(busBw, nCh * k.per_channel_nvls_tree[cc][col]);
    }
  }
  const int ll_row = nodes == 1 ? cc : (t.amd_cpu ? 1 : 0);
  const double llMax = k.ll_max_bw_GBps[ll_row][col];
  if (a == Algorithm::Ring && p == Protocol::LL) busBw = std::min(llMax, busBw * k.ring_ll_bus_factor);
  if (a == Algorithm::Ring && p == Protocol::LL128)
    busBw = std::min(busBw * k.ring_ll128_bus_factor, nCh * k.per_channel_ring_ll128[cc][col]);
  if (a == Algorithm::Tree && coll == CollType::AllReduce && p == Protocol::Simple)
    busBw = std::min(busBw * k.tree_simple_bus_factor, nCh * k.per_channel_tree[cc][col]);
  if (a == Algorithm::Tree && p == Protocol::LL) busBw = std::min(busBw / k.tree_ll_bus_divisor, llMax);
  if (a == Algorithm::Tree && p == Protocol::LL128)
    busBw = std::min(busBw * (nodes == 1 ? k.tree_ll128_bus_factor_one_node : k.tree_ll128_bus_factor_multi_node),
                     nCh * k.per_channel_tree_ll128[cc][col]);
  if (a == Algorithm::Pat) busBw *= k.pat_bus_factor;
  if (a == Algorithm::CollNetDirect) {
    const double f = static_cast<double>(ppn) / nCh;
    busBw /= f - (f - 1) / 2;
    if (t.cc >= CompCap::Hopper) busBw *= k.collnet_direct_sm90_factor;
  }

  // --- bus -> algorithm bandwidth (§5.4)
  double ratio = 0.5;
  if (a == Algorithm::Ring || a == Algorithm::Nvls || a == Algorithm::NvlsTree)
    ratio = static_cast<double>(n) / std::max(1, steps);
  if (a != Algorithm::Ring && (coll == CollType::AllGather || coll == CollType::ReduceScatter)) ratio = 1.0;
  const double algBw = busBw * ratio;

  // --- latency (§5.5)
  const int intra_hw = t.nvlink_intra ? 0 : 1;
  double intraLat = k.hw_latency_us[intra_hw][ai][pi];
  double interLat = (ppn == 1 ? k.hw_latency_us[2][0][pi] : k.hw_latency_us[2][ai][pi]) + t.latency_inter_us;
  if (p == Protocol::Simple) interLat += t.latency_inter_us;
  double lat = k.base_latency_us[ai][pi];
  const double log2n = nodes > 1 ? std::log2(static_cast<double>(nodes)) : 0.0;
  switch (a) {
    case Algorithm::Ring: {
      if (coll == CollType::Broadcast || coll == CollType::Reduce) {
        // One hop's latency: NCCL runs broadcast/reduce on the same channels as the ring (sameChannels).
        lat += k.hw_latency_us[nodes > 1 ? 2 : intra_hw][1][pi];
        break;
      }
      if (nodes > 1) {
        const double overhead = (t.amd_cpu ? k.net_overhead_us_amd : k.net_overhead_us_intel) *
                                (p == Protocol::Simple ? k.net_overhead_simple_factor : 1.0);
        intraLat = std::max(intraLat, overhead);
      }
      const int inter_steps = nodes == 1 ? 0 : coll == CollType::AllReduce ? 2 * (nodes - 1) : nodes - 1;
      lat += (steps - inter_steps) * intraLat + inter_steps * interLat;
      break;
    }
    case Algorithm::Tree: lat += 2 * ((ppn - 1) * intraLat + log2n * interLat); break;
    case Algorithm::Nvls: lat = intraLat + (nodes > 1 ? interLat : 0.0); break;
    case Algorithm::NvlsTree: lat += intraLat + 2 * log2n * interLat; break;
    case Algorithm::Pat: lat += log2n * (interLat / k.pat_inter_latency_divisor) + n * k.pat_per_rank_us; break;
    case Algorithm::CollNetDirect:
      lat += 2 * (std::min(1, ppn - 1) * intraLat + (ppn - 1) * k.collnet_direct_per_rank_us) + interLat;
      break;
    case Algorithm::CollNetChain: lat += 2 * (ppn - 1) * intraLat + interLat; break;
    default: break;
  }
  return {lat, algBw};
}

double tuner_time_us(const NcclTunerTable& k, CollType coll, Algorithm a, Protocol p, uint64_t bytes,
                     const TunerTopology& t) {
  const TunerCell cell = tuner_cell(k, coll, a, p, t);
  if (cell.algbw_GBps <= 0) return -1;
  double bw = cell.algbw_GBps, lat = cell.latency_us;
  if (a == Algorithm::Tree && coll == CollType::AllReduce) {
    const int log_size = std::clamp(static_cast<int>(std::floor(std::log2(std::max<double>(1, bytes / 64.0)))), 0, 23);
    bw *= k.tree_correction[proto_index(p)][log_size];
  }
  if (a == Algorithm::Ring && p == Protocol::Simple && coll == CollType::AllReduce && t.nodes > 1 &&
      bytes / (static_cast<double>(std::max(1, t.channels)) * std::max(1, t.ranks)) >= 64) {
    lat *= t.cc >= CompCap::Ampere ? k.ring_plateau_sm80_plus : k.ring_plateau_older;  // the ring "plateau"
  }
  return lat + static_cast<double>(bytes) / (1000.0 * bw);
}

TunerChoice tuner_choose(const NcclTunerTable& k, CollType coll, uint64_t bytes, const TunerTopology& t, Algorithm force,
                         std::optional<Protocol> proto) {
  TunerChoice best;
  best.time_us = -1;
  for (Algorithm a : {Algorithm::Tree, Algorithm::Ring, Algorithm::CollNetDirect, Algorithm::CollNetChain, Algorithm::Nvls,
                      Algorithm::NvlsTree, Algorithm::Pat}) {
    if (force != Algorithm::Auto && a != force) continue;
    if (force == Algorithm::Auto && !(t.allowed_algorithms & bit_of(a))) continue;
    for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
      if (proto && p != *proto) continue;
      if (!proto && !(t.allowed_protocols & bit_of(p))) continue;
      const double us = tuner_time_us(k, coll, a, p, bytes, t);
      if (us < 0) continue;
      if (best.time_us < 0 || us < best.time_us) {
        const TunerCell cell = tuner_cell(k, coll, a, p, t);
        best = TunerChoice{a, p, t.channels, cell.latency_us, cell.algbw_GBps, us};
      }
    }
  }
  const bool env_limits = t.allowed_algorithms != ~0u || t.allowed_protocols != ~0u;
  if (best.time_us < 0 && force == Algorithm::Auto && !proto && env_limits) {
    throw InputError("cluster.nccl_env: NCCL_ALGO and NCCL_PROTO leave no algorithm and protocol NCCL can run " +
                     std::string(workload::name_of(coll)) + " with on " + std::to_string(t.ranks) + " ranks over " +
                     std::to_string(t.nodes) + " node(s) of this hardware");
  }
  if (best.time_us < 0) {
    // Name what was forced: the protocol alone, the algorithm alone, or both.
    std::string what = proto && force == Algorithm::Auto ? std::string("--proto ") + name_of(*proto)
                                                         : std::string("--algo ") + name_of(force);
    if (proto && force != Algorithm::Auto) what += std::string(" --proto ") + name_of(*proto);
    throw InputError(what + ": NCCL cannot run " + workload::name_of(coll) + " with that " +
                     (proto && force != Algorithm::Auto ? "algorithm and protocol" : proto ? "protocol" : "algorithm") +
                     " on " + std::to_string(t.ranks) + " ranks over " + std::to_string(t.nodes) +
                     " node(s) of this hardware" +
                     (proto && *proto == Protocol::LL128 && !t.ll128 ? " (LL128 needs NVLink between the GPUs)" : ""));
  }
  // Channel reduction for small messages (§7): fewer channels while each thread would carry too little.
  if (best.algorithm == Algorithm::Ring || best.algorithm == Algorithm::Tree) {
    const int pi = proto_index(best.protocol);
    double threshold = k.thread_threshold_bytes[pi];
    if (best.algorithm == Algorithm::Ring && best.protocol == Protocol::LL) threshold *= t.ranks;
    int nc = std::max(1, t.channels);
    while (nc >= 2 && static_cast<double>(bytes) < nc * k.max_threads[pi] * threshold) --nc;
    best.channels = nc;
  }
  // NCCL_MIN_NCHANNELS raises the count NCCL would drop to (up to the channels it built), NCCL_MAX_NCHANNELS caps it.
  if (t.min_channels > 0) best.channels = std::max(best.channels, std::min(t.min_channels, std::max(1, t.channels)));
  if (t.max_channels > 0) best.channels = std::min(best.channels, t.max_channels);
  return best;
}

}  // namespace stepsim::cost
