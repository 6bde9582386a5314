// White-box NCCL model: per algorithm, the linear terms of Echo eq. 1-5 (docs/COST-MODELS.md, "NCCL white-box
// model", derives each one). Chunk sizes are NCCL's (shared/data/nccl_model_facts.md §6).
#include "stepsim/cost/collective/nccl_model.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/catalog/gpu_catalog.hpp"
#include "stepsim/cost/collective/nccl_channels.hpp"
#include "stepsim/io/input_error.hpp"
#include "stepsim/job/cluster_rates.hpp"

namespace stepsim::cost {
namespace {

using workload::CollType;

// §6: bytes per chunk step per channel. Ring+Simple all-reduce/all-gather/reduce-scatter use chunkSteps = 4 of
// the 512 KiB Simple step (2 MiB); every other (algorithm, collective) uses one step. LL carries 4 data bytes per
// 8-byte line (32 KiB of a 64 KiB step); LL128 120 of every 128 bytes (576000 B).
uint64_t chunk_bytes(Algorithm a, Protocol p, CollType c) {
  if (p == Protocol::LL) return 32768;
  if (p == Protocol::LL128) return 576000;
  if (a == Algorithm::Nvls || a == Algorithm::NvlsTree) return 131072;  // comm->nvlsChunkSize
  const bool ring_chunked = a == Algorithm::Ring && (c == CollType::AllReduce || c == CollType::AllGather ||
                                                     c == CollType::ReduceScatter);
  return ring_chunked ? 4 * 524288ull : 524288ull;
}

// NCCL's tuner applies these factors to a protocol's bus bandwidth (facts §5.3): LL moves half payload, LL128
// is capped at 92%.
double protocol_efficiency(Protocol p) {
  switch (p) {
    case Protocol::LL: return 0.5;
    case Protocol::LL128: return 0.92;
    case Protocol::Simple: return 1.0;
  }
  return 1.0;
}

// NCCL's algorithm-specific chunk shrinking (facts §6), so that small buffers still pipeline: tree LL128 halves
// its chunk while there are too few chunks per channel for the tree depth; NVLS and NVLS-tree step down by the
// buffer's size relative to one chunk per channel and head.
uint64_t shrink_chunk(uint64_t chunk, Algorithm a, Protocol p, double bytes, double nch, double nodes, double ppn) {
  if (a == Algorithm::Tree && p == Protocol::LL128) {
    const double depth = 1 + std::log2(nodes) + 0.1 * ppn;
    while (chunk > 131072 && bytes / (nch * chunk) < depth * 64 / ppn) chunk /= 2;
    while (chunk > 32768 && bytes / (nch * chunk) < depth * 16 / ppn) chunk /= 2;
    return chunk;
  }
  const double unit = nch * ppn * static_cast<double>(chunk);
  if (a == Algorithm::Nvls) return bytes < 2 * unit ? 16384 : bytes < 8 * unit ? 32768 : bytes < 64 * unit ? 65536 : chunk;
  if (a == Algorithm::NvlsTree) {
    const uint64_t base = 262144;
    const double u = nch * ppn * static_cast<double>(base);
    return bytes >= 32 * u ? base : bytes >= 16 * u ? base / 2 : bytes >= 4 * u ? base / 4 : base / 8;
  }
  return chunk;
}

int64_t ceil_div(double a, double b) { return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(a / b))); }

struct Shape {
  double n, M, K;    // ranks, nodes, ranks on the busiest node
  double P;          // bytes
  double Bi, Bo;     // B/us: intra-node per GPU, inter-node per node (K NICs)
  double Bnic;       // B/us: one NIC
  bool inter_bottleneck;
};

// Scales of alpha, beta, gamma for (algorithm, protocol) relative to the Ring/Simple reference the parameters are
// expressed in: NCCL's own latency constants say how much a step of LL costs next to one of Simple.
struct Scales {
  double a, b, g;
};
Scales scales(const NcclTunerTable& k, Algorithm a, Protocol p, bool nvlink) {
  const HwLink intra = nvlink ? HwLink::NvLink : HwLink::Pci;
  const double base = nccl_base_latency_us(k, a, p);
  const double ref_b = nccl_hw_latency_us(k, intra, Algorithm::Ring, Protocol::Simple);
  const double ref_g = nccl_hw_latency_us(k, HwLink::Net, Algorithm::Ring, Protocol::Simple);
  const double hb = nccl_hw_latency_us(k, intra, a, p), hg = nccl_hw_latency_us(k, HwLink::Net, a, p);
  return {base > 0 ? base / nccl_base_latency_us(k, Algorithm::Ring, Protocol::Simple) : 1.0, hb > 0 ? hb / ref_b : 1.0,
          hg > 0 ? hg / ref_g : 1.0};
}

}  // namespace

std::array<double, kNcclParamCount> theta_of(const NcclParams& p) {
  return {p.alpha_us, p.beta_us, p.gamma_us, 1.0 / p.intra_efficiency, 1.0 / p.inter_efficiency, 1.0 / p.reduce_GBps};
}

NcclParams params_of(const std::array<double, kNcclParamCount>& th, const NcclParams& base) {
  NcclParams p = base;
  p.alpha_us = th[0];
  p.beta_us = th[1];
  p.gamma_us = th[2];
  if (th[3] > 0) p.intra_efficiency = 1.0 / th[3];
  if (th[4] > 0) p.inter_efficiency = 1.0 / th[4];
  if (th[5] > 0) p.reduce_GBps = 1.0 / th[5];
  return p;
}

double time_us(const NcclTerms& t, const NcclParams& p) {
  const auto th = theta_of(p);
  double us = 0;
  for (int i = 0; i < kNcclParamCount; ++i) us += t.x[i] * th[i];
  return us;
}

namespace {

// What NCCL's environment changes in its search and tuner (spec::NcclEnv; names were checked when it was read).
void apply_nccl_env(const spec::NcclEnv& env, NcclHardware& h) {
  TunerTopology& t = h.tuner;
  if (!env.algorithms.empty()) {
    t.allowed_algorithms = 0;
    for (const std::string& a : env.algorithms) t.allowed_algorithms |= bit_of(*parse_algorithm(a));
  }
  if (!env.protocols.empty()) {
    t.allowed_protocols = 0;
    for (const std::string& p : env.protocols) t.allowed_protocols |= bit_of(*parse_protocol(p));
  }
  if (env.nvls_disabled) t.nvls = false;
  t.min_channels = env.min_channels;
  t.max_channels = env.max_channels;
  if (env.buffsize > 0) h.simple_chunk_scale = static_cast<double>(env.buffsize) / (4 << 20);
}

}  // namespace

NcclHardware nccl_hardware(const catalog::Catalog& catalog, const spec::ClusterSpec& cluster, int channels,
                           double nvls_efficiency) {
  const hw::GpuSpec& gpu = hw::effective_gpu(catalog.gpus, cluster);
  NcclHardware h;
  TunerTopology& t = h.tuner;
  t.cc = gpu.arch == hw::GpuArch::Volta       ? CompCap::Volta
         : gpu.arch == hw::GpuArch::Hopper    ? CompCap::Hopper
         : gpu.arch == hw::GpuArch::Blackwell ? CompCap::Blackwell
                                              : CompCap::Ampere;  // NCCL's compCapIndex puts Ada (8.9) with Ampere
  t.nvlink_intra = gpu.nvswitch || gpu.arch == hw::GpuArch::Volta;
  t.nvls = gpu.nvswitch && t.cc >= CompCap::Hopper;
  t.nvswitch = gpu.nvswitch;
  t.collnet = cluster.network.sharp;
  t.ll128 = t.nvlink_intra;
  t.channels = channels;
  h.intra_GBps = cluster.intra_node.bandwidth_GBps;
  h.nic_GBps = spec::inter_node_GBps_per_gpu(cluster);
  h.nvls_efficiency = nvls_efficiency;
  h.net_latency_scale = catalog.nccl.net_latency_scale(cluster.inter_node.transport);
  h.constants = &catalog.nccl_tuner;
  // The GPU's local NICs as NCCL finds them: its own where a node has more NICs than GPUs, else the one it shares; at
  // least one channel per NIC, more until each carries its 14 GB/s of their total.
  const int gpus = std::max(1, std::min(cluster.gpus_per_node, cluster.num_gpus));
  const int local_nics = std::max(1, spec::nics_per_node(cluster) / gpus);
  h.net_peer_channels =
      std::max(local_nics, static_cast<int>(std::ceil(local_nics * spec::one_nic_GBps(cluster) /
                                                      catalog.nccl_tuner.p2p_per_channel_net_GBps)));
  h.lone_gpu_channels = lone_gpu_channels(t.cc, local_nics, spec::one_nic_GBps(cluster),
                                          std::max(1, cluster.num_gpus / gpus));
  // A cluster of one-GPU nodes: every communicator across its nodes is one.
  if (gpus == 1 && cluster.num_gpus > 1) t.channels = h.lone_gpu_channels;
  apply_nccl_env(cluster.nccl_env, h);
  return h;
}

NcclTerms nccl_terms(const NcclHardware& hw, CollType coll, uint64_t bytes, const GroupGeometry& geometry,
                     Algorithm force, std::optional<Protocol> proto) {
  NcclTerms out;
  const GroupGeometry g = normalized(geometry);
  if (g.ranks <= 1 || bytes == 0) return out;  // NCCL returns at once; nothing to pay
  Shape s{static_cast<double>(g.ranks), static_cast<double>(g.nodes), static_cast<double>(g.ranks_per_node),
          static_cast<double>(bytes), hw.intra_GBps * 1e3, g.ranks_per_node * hw.nic_GBps * 1e3,
          hw.nic_GBps * 1e3, false};
  s.inter_bottleneck = g.nodes > 1 && s.Bo < s.Bi;
  auto& x = out.x;

  if (coll == CollType::AllToAll) {
    if (force != Algorithm::Auto) {
      throw InputError(std::string("--algo ") + name_of(force) + ": NCCL runs all-to-all as grouped send/recv");
    }
    if (proto && *proto != Protocol::Simple) {
      throw InputError(std::string("--proto ") + name_of(*proto) + ": all-to-all is timed as grouped send/recv with "
                       "the Simple protocol");
    }
    // Every rank sends P/n to each peer: (K-1) shares over its NVLink port, (n-K) over its own NIC, concurrently.
    const double intra = (s.K - 1) / s.n * s.P / s.Bi, inter = (s.n - s.K) / s.n * s.P / s.Bnic;
    out.algorithm = Algorithm::Direct;
    x[0] = 1;
    x[1] = s.K > 1 ? 1 : 0;
    x[2] = s.M > 1 ? 1 : 0;
    if (inter >= intra) x[4] = inter;
    else x[3] = intra;
    x[2] *= hw.net_latency_scale;
    out.channels = hw.tuner.channels;
    return out;
  }

  TunerTopology topo = hw.tuner;
  topo.ranks = g.ranks;
  topo.nodes = g.nodes;
  topo.ranks_per_node = g.ranks_per_node;
  if (g.ranks_per_node == 1 && g.nodes > 1) topo.channels = hw.lone_gpu_channels;
  topo.bw_intra = hw.intra_GBps * 0.8 / topo.channels;  // NCCL counts 20 GB/s of a nominal 25 GB/s NVLink
  topo.bw_inter = g.ranks_per_node * hw.nic_GBps / topo.channels;
  const TunerChoice choice = tuner_choose(*hw.constants, coll, bytes, topo, force, proto);
  const Algorithm a = choice.algorithm;
  const Protocol p = choice.protocol;
  out.algorithm = a;
  out.protocol = p;
  out.channels = choice.channels;
  const double nch = choice.channels;
  const double eff = protocol_efficiency(p);
  const Scales sc = scales(*hw.constants, a, p, hw.tuner.nvlink_intra);
  uint64_t chunk = chunk_bytes(a, p, coll);
  if (p == Protocol::Simple && a != Algorithm::Nvls && a != Algorithm::NvlsTree) {
    chunk = std::max<uint64_t>(4096, static_cast<uint64_t>(static_cast<double>(chunk) * hw.simple_chunk_scale));
  }
  const uint64_t cmax = shrink_chunk(chunk, a, p, s.P, choice.channels, s.M, s.K);
  const bool reduces = coll == CollType::AllReduce || coll == CollType::ReduceScatter || coll == CollType::Reduce;
  x[0] = sc.a;
  if (a == Algorithm::Ring || a == Algorithm::Tree) {
    // NCCL gives each channel 1/C of the GPU's bandwidth (bwIntra, bwInter are per channel) and drops channels
    // for small buffers (tuner_choose): with fewer channels only their share of the links is driven.
    const double share = std::min(1.0, nch / std::max(1, topo.channels));
    s.Bi *= share;
    s.Bo *= share;
  }

  switch (a) {
    case Algorithm::Ring:
      if (coll == CollType::Broadcast || coll == CollType::Reduce) {
        // Pipelined chain through n-1 hops (n-M on NVLink, M-1 across nodes), then eta-1 more chunks at the
        // bottleneck hop's pace (Echo eq. 5's structure without the tree).
        out.eta = ceil_div(s.P, nch * cmax);
        const double eta = static_cast<double>(out.eta), chunk = s.P / eta;
        const double hi = s.n - s.M, ho = s.M - 1;
        x[1] = (hi + (s.inter_bottleneck ? 0 : eta - 1)) * sc.b;
        x[2] = (ho + (s.inter_bottleneck ? eta - 1 : 0)) * sc.g;
        x[3] = (hi + (s.inter_bottleneck ? 0 : eta - 1)) * chunk / (s.Bi * eff);
        x[4] = (ho + (s.inter_bottleneck ? eta - 1 : 0)) * chunk / (s.Bo * eff);
        x[5] = coll == CollType::Reduce ? s.P / 1e3 : 0;
      } else {
        // Echo eq. 2-4: eta rounds of `steps` chunk steps; each step moves a chunk over every ring link at once, so
        // a step costs what the slowest link kind costs. Per link the ring carries steps/n of the buffer.
        const double steps = coll == CollType::AllReduce ? 2 * (s.n - 1) : s.n - 1;
        out.eta = ceil_div(s.P, nch * s.n * cmax);
        const double eta = static_cast<double>(out.eta);
        if (s.inter_bottleneck) {
          // The NICs pace the ring and the chunk rounds pipeline behind their transfer, so latency is paid once per
          // call, as NCCL's own tuner counts it: the steps that cross a node boundary (2M for all-reduce, M
          // otherwise) at the network step cost, the rest at NVLink's (Echo's eta x steps NIC steps made 3 x 8 A100
          // 32 % slow; docs/VALIDATION-COMM.md).
          const double inter_steps = std::min(steps, (coll == CollType::AllReduce ? 2 : 1) * s.M);
          x[1] = (steps - inter_steps) * sc.b;
          x[2] = inter_steps * sc.g;
          x[4] = steps / s.n * s.P / (s.Bo * eff);
        } else {
          x[1] = eta * steps * sc.b;
          x[3] = steps / s.n * s.P / (s.Bi * eff);
        }
        x[5] = reduces ? (s.n - 1) / s.n * s.P / 1e3 : 0;
      }
      break;
    case Algorithm::Tree: {
      // Echo eq. 5: the first chunk climbs a chain of K-1 NVLink hops and a double binary tree of log2(M) NIC
      // hops and comes back down (2x each); the other eta-1 chunks follow at the bottleneck's pace, each crossing
      // it up and down (2 chunks per round through a GPU's port or a node's NICs). Except the NICs of a 2-node tree:
      // each node is the root of one of the two trees and the leaf of the other, so per direction its NICs carry
      // the leaf's half going up and the root's half coming down, one chunk per round, not two (why NCCL's 2-node
      // tree beats the NIC rate, nccl-tests #196; in interior nodes of larger trees two children each send a half).
      out.eta = ceil_div(s.P, nch * cmax);
      const double eta = static_cast<double>(out.eta), chunk = s.P / eta;
      const double di = 2 * (s.K - 1), dout = s.M > 1 ? 2 * std::ceil(std::log2(s.M)) : 0;
      const double per_round_out = s.M == 2 ? 1 : 2;
      const bool inter_bottleneck = s.M > 1 && per_round_out / s.Bo > 2 / s.Bi;
      const double ri = inter_bottleneck ? 0 : eta - 1, ro = inter_bottleneck ? eta - 1 : 0;
      x[1] = (di + ri) * sc.b;
      x[2] = (dout + ro) * sc.g;
      x[3] = (di + 2 * ri) * chunk / (s.Bi * eff);
      x[4] = (dout + per_round_out * ro) * chunk / (s.Bo * eff);
      x[5] = s.P / 1e3;
      break;
    }
    case Algorithm::Nvls:
    case Algorithm::NvlsTree: {
      // NVSwitch multicast (NVLink SHARP): every access to the multicast buffer goes through the GPU's own switch
      // port, its own slice included. All-reduce: each GPU multimem-load-reduces its 1/K slice (the switch reads
      // that slice from all K GPUs: P leaves each GPU's port) and multimem-stores the result (P/K out, which the
      // switch writes to all K GPUs: P comes in), so the busier direction of a port carries (K+1)/K P.
      // Reduce-scatter is the load half (P out), all-gather the store half (P in): P each. The port runs at the
      // nominal rate x the profile's intra_efficiency (NCCL's per-link NVLink rate over the nominal) x NCCL's
      // nvlsEfficiency. Check against NCCL's maintainers (nccl-tests issue 212): 8 x H100, 450 GB/s:
      // 450 x 0.824 x 0.85 x 8/9 = 280 GB/s algbw = 490 GB/s busbw, they expect ~275 / ~480.
      out.eta = ceil_div(s.P, nch * cmax);
      const double e_nvls = hw.nvls_efficiency > 0 ? hw.nvls_efficiency : nvls_efficiency(*hw.constants, hw.tuner.cc);
      const double share = coll == CollType::AllReduce ? (s.K + 1) / s.K : 1.0;
      const double intra = share * s.P / (s.Bi * e_nvls);
      // Latency: NCCL's NVLS latency (25 us NVLink hw latency over the ring step's 3.4, base latency 0: NCCL
      // replaces the base for NVLS), then one NVLink step per chunk round: each GPU moves its slice P/K through
      // `nch` channels `cmax` bytes at a time (NCCL shrinks cmax for smaller buffers, shrink_chunk), and every
      // round pays a step's fixed cost, as a ring step does. That is why NVLS busbw climbs slowly with size.
      const double rounds = static_cast<double>(ceil_div(s.P / s.K, nch * static_cast<double>(cmax)));
      x[0] = 0;
      x[1] = sc.b + rounds;
      x[3] = intra;
      if (a == Algorithm::NvlsTree) {
        // Across nodes a double binary tree: a node interior in one tree receives and sends 2 P through its K
        // NICs; on two nodes each node is one tree's root and the other's leaf, P each way (as the tree above). The
        // NVSwitch reduction and the tree pipeline chunk by chunk, so the slower of the two paces it.
        const double inter = (s.M == 2 ? 1 : 2) * s.P / s.Bo;
        x[2] = 2 * std::ceil(std::log2(s.M)) * sc.g;
        x[3] = inter > intra ? 0 : intra;
        x[4] = inter > intra ? inter : 0;
      } else if (s.M > 1) {
        // NVLS with SHARP across nodes: the node's reduced buffer goes up its K NICs once and the fabric's result
        // comes back once (P each way per node), one network round trip, paced by the slower stage.
        const double inter = s.P / s.Bo;
        x[2] = sc.g;
        x[3] = inter > intra ? 0 : intra;
        x[4] = inter > intra ? inter : 0;
      }
      break;
    }
    case Algorithm::CollNetDirect:
    case Algorithm::CollNetChain: {
      // In-network reduction (SHARP): inside the node the GPUs reduce their buffers to the NIC-attached heads and
      // spread the result back; each node sends P up its K NICs and gets the fabric's sum back (P each way), one
      // network round trip. Direct (NVSwitch): every GPU is a head, a reduce-scatter and an all-gather over
      // NVLink, 2(K-1)/K of P through each port. Chain: a chain through the node's GPUs, P down and P up each
      // NVLink hop, K-1 hops deep each way. The stages pipeline chunk by chunk: the slower one paces the call.
      out.eta = ceil_div(s.P, nch * cmax);
      const bool direct = a == Algorithm::CollNetDirect;
      const double intra = (direct ? 2 * (s.K - 1) / s.K : (s.K > 1 ? 2.0 : 0.0)) * s.P / (s.Bi * eff);
      const double inter = s.P / (s.Bo * eff);
      x[1] = (direct ? 2 * std::min(1.0, s.K - 1) : 2 * (s.K - 1)) * sc.b;
      x[2] = sc.g;
      x[3] = inter > intra ? 0 : intra;
      x[4] = inter > intra ? inter : 0;
      x[5] = (s.K - 1) / s.K * s.P / 1e3;  // the GPUs' share of the reduction; the switches do the rest
      break;
    }
    case Algorithm::Pat: {
      // Parallel aggregated trees, one GPU per node: log2(n) NIC rounds of latency, ring-like volume at NCCL's
      // 0.75 efficiency.
      out.eta = ceil_div(s.P, nch * cmax);
      x[2] = std::ceil(std::log2(s.n)) * sc.g;
      x[4] = (s.n - 1) / s.n * s.P / (s.Bo * 0.75);
      x[5] = reduces ? (s.n - 1) / s.n * s.P / 1e3 : 0;
      break;
    }
    default: break;
  }
  out.chunk_bytes = static_cast<uint64_t>(std::ceil(s.P / (static_cast<double>(out.eta) * nch)));
  x[2] *= hw.net_latency_scale;  // a slower transport pays more per network step (x2 counts them)
  return out;
}

int p2p_net_channels(const NcclHardware& hw, uint64_t bytes, int group_ranks) {
  const auto pow2_up = [](int64_t x) {
    int64_t p = 1;
    while (p < x) p *= 2;
    return p;
  };
  const int64_t p2p_channels = pow2_up(std::max(1, hw.tuner.channels));
  int64_t per_peer = pow2_up(std::max(1, hw.net_peer_channels));
  // Every peer of a communicator across nodes must fit the p2p channels in rounds of peers_per_batch.
  const double batch = hw.constants ? hw.constants->p2p_peers_per_batch : 8;
  const int64_t rounds = group_ranks > 0 ? static_cast<int64_t>(std::ceil(group_ranks / batch)) : 1;
  while (per_peer * rounds > p2p_channels && per_peer > 1) per_peer /= 2;
  // A send is striped over as many channels as it has 128 KiB chunks (NCCL_P2P_NET_CHUNKSIZE), up to the peer's.
  const int64_t chunks = static_cast<int64_t>((bytes + 131071) / 131072);
  return static_cast<int>(std::max<int64_t>(1, std::min(per_peer, pow2_up(std::max<int64_t>(1, chunks)))));
}

NcclTerms nccl_p2p_terms(const NcclHardware& hw, uint64_t bytes, bool same_node, int group_ranks) {
  NcclTerms out;
  out.algorithm = Algorithm::Direct;
  out.channels = 1;
  if (bytes == 0) return out;
  const double P = static_cast<double>(bytes);
  out.x[0] = 1;
  if (same_node) {
    out.x[1] = 1;
    out.x[3] = P / (hw.intra_GBps * 1e3);
  } else {
    out.x[2] = hw.net_latency_scale;
    double GBps = hw.nic_GBps;
    if (group_ranks > 0 && hw.constants) {
      out.channels = p2p_net_channels(hw, bytes, group_ranks);
      GBps = std::min(GBps, out.channels * hw.constants->p2p_per_channel_net_GBps);
    }
    out.x[4] = P / (GBps * 1e3);
  }
  out.chunk_bytes = same_node ? 524288 : 131072;  // NCCL_P2P_NVL_CHUNKSIZE / NCCL_P2P_NET_CHUNKSIZE
  out.eta = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(P / static_cast<double>(out.chunk_bytes))));
  return out;
}

namespace {

int64_t to_ns(double us) { return std::max<int64_t>(1, std::llround(us * 1e3)); }

class NcclModel final : public CollectiveModel {
 public:
  NcclModel(const catalog::Catalog& catalog, const spec::ClusterSpec& c, const NcclProfile& profile,
            NcclParamTable table, const std::string& nccl_version)
      : constants_(catalog.nccl_tuner.for_version(nccl_version, kVersionKey)),
        hw_(nccl_hardware(catalog, c, profile.channels, profile.nvls_efficiency)),
        table_(std::move(table)) {
    hw_.constants = &constants_;
    // An algorithm the release does not have is never chosen; forcing it is refused (estimate).
    for (const std::string& a : constants_.absent_algorithms) {
      if (const std::optional<Algorithm> alg = parse_algorithm(a)) hw_.tuner.allowed_algorithms &= ~bit_of(*alg);
    }
  }

  int64_t collective_ns(CollType coll, uint64_t bytes, const GroupGeometry& g) const override {
    return estimate(coll, bytes, g, Algorithm::Auto, std::nullopt).ns;
  }

  int64_t p2p_ns(uint64_t bytes, bool same_node) const override { return p2p_ns(bytes, same_node, 0); }

  int64_t p2p_ns(uint64_t bytes, bool same_node, int group_ranks) const override {
    if (bytes == 0) return 0;
    const NcclTerms t = nccl_p2p_terms(hw_, bytes, same_node, group_ranks);
    return to_ns(time_us(t, table_.lookup(same_node ? 1 : 2, t.chunk_bytes)));
  }

  int p2p_channels(uint64_t bytes, bool same_node, int group_ranks) const override {
    return same_node ? 1 : p2p_net_channels(hw_, bytes, group_ranks);
  }

  CollectiveEstimate estimate(CollType coll, uint64_t bytes, const GroupGeometry& geometry, Algorithm algo,
                              std::optional<Protocol> proto) const override {
    if (coll == CollType::SendRecv) {  // a ring exchange: one send/recv pair over the group's slowest hop
      if (algo != Algorithm::Auto) throw InputError("--algo: send_recv has no algorithm choice");
      if (proto && *proto != Protocol::Simple) {
        throw InputError(std::string("--proto ") + name_of(*proto) + ": send/recv is timed with the Simple protocol");
      }
      if (geometry.ranks <= 1) return {0, Algorithm::Direct, Protocol::Simple, 0};
      const bool same_node = geometry.nodes <= 1;
      return {p2p_ns(bytes, same_node, geometry.ranks), Algorithm::Direct, Protocol::Simple,
              same_node ? 0 : p2p_channels(bytes, same_node, geometry.ranks)};
    }
    for (const std::string& a : constants_.absent_algorithms) {
      if (algo != Algorithm::Auto && parse_algorithm(a) == algo) {
        throw InputError(std::string("--algo ") + name_of(algo) + ": NCCL " + constants_.version +
                         " (the NCCL version asked for) has no " + name_of(algo));
      }
    }
    const NcclTerms t = nccl_terms(hw_, coll, bytes, geometry, algo, proto);
    const GroupGeometry g = normalized(geometry);
    if (g.ranks <= 1 || bytes == 0) return {0, t.algorithm, t.protocol, t.channels};
    return {to_ns(time_us(t, table_.lookup(g.nodes, t.chunk_bytes))), t.algorithm, t.protocol, t.channels};
  }

 private:
  static constexpr const char* kVersionKey = "simulation.nccl_version";
  NcclTunerTable constants_;  // NCCL's constants of the job's release; hw_.constants points here
  NcclHardware hw_;
  NcclParamTable table_;
};

}  // namespace

std::unique_ptr<CollectiveModel> make_nccl_model(const catalog::Catalog& catalog, const spec::ClusterSpec& cluster,
                                                 const NcclProfile& profile, NcclParamTable table,
                                                 const std::string& nccl_version) {
  return std::make_unique<NcclModel>(catalog, cluster, profile, std::move(table), nccl_version);
}

std::unique_ptr<CollectiveModel> make_nccl_model(const catalog::Catalog& catalog, const spec::ClusterSpec& cluster,
                                                 const std::string& nccl_version) {
  const NcclProfile& p = catalog.nccl.find(hw::effective_gpu(catalog.gpus, cluster));
  NcclParamTable table(p.params);
  for (const auto& row : p.bands) table.add(row);
  return make_nccl_model(catalog, cluster, p, std::move(table), nccl_version);
}

}  // namespace stepsim::cost
