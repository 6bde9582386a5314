// Every constant below is a number from shared/data/nccl_model_facts.md (NCCL 2.30.7, src/graph/tuning.cc and
// src/include/comm.h); the section of that file is named next to each table.
#include "stepsim/cost/nccl_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "stepsim/spec/input_error.hpp"

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

// §2 baseLatencies[algo][proto] (us).
constexpr double kBaseLat[7][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0},
                                   {0, 0, 0},        {0, 0, 0},        {8.0, 8.0, 8.0}};
// §3 hwLatencies[hw][algo][proto] (us); hw 0 NVLINK, 1 PCI, 2 NET.
constexpr double kHwLat[3][7][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
// §4 llMaxBws[row][N1,N2,N4]: single node by arch, multi-node by CPU vendor (0 Intel/other, 1 AMD).
constexpr double kLLMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
// §4 per-channel caps [compCap][N1,N2,N4].
constexpr double kPerChRingLL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}};
constexpr double kPerChTreeLL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChNvlsTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// §6 treeCorrectionFactor[proto][log2(bytes/64)], 64 B .. 256 MiB.
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// §7 max threads and bytes-per-thread thresholds per protocol (channel reduction).
constexpr int kMaxThreads[3] = {512, 640, 512};
constexpr int kThreadThreshold[3] = {8, 8, 64};

int node_column(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }

int nsteps(CollType c, int n) {
  switch (c) {
    case CollType::AllReduce: return 2 * (n - 1);
    case CollType::AllGather:
    case CollType::ReduceScatter: return n - 1;
    default: return n;  // broadcast, reduce
  }
}

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
      if (a == Algorithm::Nvls) return t.nvls && t.nodes == 1 && t.channels >= 2;
      return false;
    case CollType::AllReduce:
      if (a == Algorithm::Ring || a == Algorithm::Tree) return true;
      // NVLS across nodes needs the fabric to reduce too (SHARP); without it NCCL runs NVLS-tree.
      if (a == Algorithm::Nvls) return t.nvls && (t.nodes == 1 || t.collnet) && t.channels >= 2;
      if (a == Algorithm::CollNetDirect) return t.collnet && t.nodes > 1 && t.nvswitch;
      if (a == Algorithm::CollNetChain) return t.collnet && t.nodes > 1;
      if (a == Algorithm::NvlsTree) return t.nvls && t.nodes > 1 && t.channels >= 2;
      return false;
    default: return false;
  }
}

}  // namespace

double nccl_base_latency_us(Algorithm a, Protocol p) { return kBaseLat[algo_index(a)][proto_index(p)]; }
double nccl_hw_latency_us(HwLink hw, Algorithm a, Protocol p) {
  return kHwLat[static_cast<int>(hw)][algo_index(a)][proto_index(p)];
}
double nvls_efficiency(CompCap cc) { return kNvlsEfficiency[static_cast<int>(cc)]; }

TunerCell tuner_cell(CollType coll, Algorithm a, Protocol p, const TunerTopology& t) {
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
    const double eff = kNvlsEfficiency[cc];
    double intra = t.bw_intra * nCh * eff * (nCh - 1) / nCh;  // NVLS uses the whole NVSwitch port
    intra *= coll == CollType::AllReduce ? 2.0 : static_cast<double>(ppn - 1) / ppn;
    busBw = intra;
    if (nodes > 1) {
      double inter = t.bw_inter * nCh;
      if (a == Algorithm::NvlsTree && nodes <= 2) inter *= 2;
      busBw = std::min(busBw, inter);
      if (a == Algorithm::NvlsTree) busBw = std::min(busBw, nCh * kPerChNvlsTree[cc][col]);
    }
  }
  const int ll_row = nodes == 1 ? cc : (t.amd_cpu ? 1 : 0);
  const double llMax = kLLMaxBw[ll_row][col];
  if (a == Algorithm::Ring && p == Protocol::LL) busBw = std::min(llMax, busBw * 0.5);
  if (a == Algorithm::Ring && p == Protocol::LL128) busBw = std::min(busBw * 0.92, nCh * kPerChRingLL128[cc][col]);
  if (a == Algorithm::Tree && coll == CollType::AllReduce && p == Protocol::Simple)
    busBw = std::min(busBw * 0.92, nCh * kPerChTree[cc][col]);
  if (a == Algorithm::Tree && p == Protocol::LL) busBw = std::min(busBw / 3.8, llMax);
  if (a == Algorithm::Tree && p == Protocol::LL128)
    busBw = std::min(busBw * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nCh * kPerChTreeLL128[cc][col]);
  if (a == Algorithm::Pat) busBw *= 0.75;
  if (a == Algorithm::CollNetDirect) {
    const double f = static_cast<double>(ppn) / nCh;
    busBw /= f - (f - 1) / 2;
    if (t.cc >= CompCap::Hopper) busBw *= 0.85;
  }

  // --- bus -> algorithm bandwidth (§5.4)
  double ratio = 0.5;
  if (a == Algorithm::Ring || a == Algorithm::Nvls || a == Algorithm::NvlsTree)
    ratio = static_cast<double>(n) / std::max(1, steps);
  if (a != Algorithm::Ring && (coll == CollType::AllGather || coll == CollType::ReduceScatter)) ratio = 1.0;
  const double algBw = busBw * ratio;

  // --- latency (§5.5)
  const int intra_hw = t.nvlink_intra ? 0 : 1;
  double intraLat = kHwLat[intra_hw][ai][pi];
  double interLat = (ppn == 1 ? kHwLat[2][0][pi] : kHwLat[2][ai][pi]) + t.latency_inter_us;
  if (p == Protocol::Simple) interLat += t.latency_inter_us;
  double lat = kBaseLat[ai][pi];
  const double log2n = nodes > 1 ? std::log2(static_cast<double>(nodes)) : 0.0;
  switch (a) {
    case Algorithm::Ring: {
      if (coll == CollType::Broadcast || coll == CollType::Reduce) {
        // One hop's latency: NCCL runs broadcast/reduce on the same channels as the ring (sameChannels).
        lat += kHwLat[nodes > 1 ? 2 : intra_hw][1][pi];
        break;
      }
      if (nodes > 1) {
        const double overhead = (t.amd_cpu ? 2.0 : 1.0) * (p == Protocol::Simple ? 3.0 : 1.0);
        intraLat = std::max(intraLat, overhead);
      }
      const int inter_steps = nodes == 1 ? 0 : coll == CollType::AllReduce ? 2 * (nodes - 1) : nodes - 1;
      lat += (steps - inter_steps) * intraLat + inter_steps * interLat;
      break;
    }
    case Algorithm::Tree: lat += 2 * ((ppn - 1) * intraLat + log2n * interLat); break;
    case Algorithm::Nvls: lat = intraLat + (nodes > 1 ? interLat : 0.0); break;
    case Algorithm::NvlsTree: lat += intraLat + 2 * log2n * interLat; break;
    case Algorithm::Pat: lat += log2n * (interLat / 3.5) + n * 2.8; break;
    case Algorithm::CollNetDirect: lat += 2 * (std::min(1, ppn - 1) * intraLat + (ppn - 1) * 0.4) + interLat; break;
    case Algorithm::CollNetChain: lat += 2 * (ppn - 1) * intraLat + interLat; break;
    default: break;
  }
  return {lat, algBw};
}

double tuner_time_us(CollType coll, Algorithm a, Protocol p, uint64_t bytes, const TunerTopology& t) {
  const TunerCell cell = tuner_cell(coll, a, p, t);
  if (cell.algbw_GBps <= 0) return -1;
  double bw = cell.algbw_GBps, lat = cell.latency_us;
  if (a == Algorithm::Tree && coll == CollType::AllReduce) {
    const int log_size = std::clamp(static_cast<int>(std::floor(std::log2(std::max<double>(1, bytes / 64.0)))), 0, 23);
    bw *= kTreeCorrection[proto_index(p)][log_size];
  }
  if (a == Algorithm::Ring && p == Protocol::Simple && coll == CollType::AllReduce && t.nodes > 1 &&
      bytes / (static_cast<double>(std::max(1, t.channels)) * std::max(1, t.ranks)) >= 64) {
    lat *= t.cc >= CompCap::Ampere ? 1.4 : 1.9;  // NCCL's ring "plateau" correction
  }
  return lat + static_cast<double>(bytes) / (1000.0 * bw);
}

TunerChoice tuner_choose(CollType coll, uint64_t bytes, const TunerTopology& t, Algorithm force,
                         std::optional<Protocol> proto) {
  TunerChoice best;
  best.time_us = -1;
  for (Algorithm a : {Algorithm::Tree, Algorithm::Ring, Algorithm::CollNetDirect, Algorithm::CollNetChain, Algorithm::Nvls,
                      Algorithm::NvlsTree, Algorithm::Pat}) {
    if (force != Algorithm::Auto && a != force) continue;
    for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
      if (proto && p != *proto) continue;
      const double us = tuner_time_us(coll, a, p, bytes, t);
      if (us < 0) continue;
      if (best.time_us < 0 || us < best.time_us) {
        const TunerCell cell = tuner_cell(coll, a, p, t);
        best = TunerChoice{a, p, t.channels, cell.latency_us, cell.algbw_GBps, us};
      }
    }
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
    double threshold = kThreadThreshold[pi];
    if (best.algorithm == Algorithm::Ring && best.protocol == Protocol::LL) threshold *= t.ranks;
    int nc = std::max(1, t.channels);
    while (nc >= 2 && static_cast<double>(bytes) < nc * kMaxThreads[pi] * threshold) --nc;
    best.channels = nc;
  }
  return best;
}

}  // namespace stepsim::cost
