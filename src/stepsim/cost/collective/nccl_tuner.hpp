#pragma once
// NCCL's own tuning model (src/graph/tuning.cc, ncclTopoTuneModel + topoGetAlgoInfo), restated from the
// numbers in shared/data/nccl_model_facts.md (NCCL 2.30.7): per (algorithm, protocol) a latency and a bus
// bandwidth, time = latency + bytes / algorithm bandwidth, and the minimum wins. stepsim uses it the way NCCL
// does: to CHOOSE algorithm, protocol and channel count; the time itself comes from the white-box model.
#include <cstdint>
#include <vector>

#include "stepsim/cost/collective/collective_algorithm.hpp"
#include "stepsim/catalog/nccl_tuner_table.hpp"
#include "stepsim/workload/op.hpp"

namespace stepsim::cost {

enum class CompCap { Volta, Ampere, Hopper, Blackwell };  // NCCL's compCapIndex

// What NCCL's topology search would have found for one communicator.
struct TunerTopology {
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node = 1;  // ppn
  CompCap cc = CompCap::Hopper;
  bool nvlink_intra = true;   // graph typeIntra is NVLink (else PCI)
  bool nvls = false;          // NVSwitch multicast (Hopper/Blackwell NVSwitch nodes)
  bool nvswitch = false;      // GPUs of a node meet in an NVSwitch (CollNetDirect needs it)
  bool collnet = false;       // in-network reduction across nodes (SHARP): CollNet, and NVLS across nodes
  bool ll128 = true;          // LL128 enabled (NVLink inside the node, sm70+)
  bool amd_cpu = false;
  int channels = 16;          // ring/tree channels
  double bw_intra = 20;       // GB/s per channel (graph->bwIntra)
  double bw_inter = 12;       // GB/s per channel (graph->bwInter)
  double latency_inter_us = 0;  // graph->latencyInter
  // The NCCL environment's limits (cluster.nccl_env): algorithms and protocols as bit masks over Algorithm and
  // Protocol (all set = NCCL's choice), channel bounds (0 = none).
  uint32_t allowed_algorithms = ~0u;
  uint32_t allowed_protocols = ~0u;
  int min_channels = 0, max_channels = 0;
};
inline uint32_t bit_of(Algorithm a) { return 1u << static_cast<int>(a); }
inline uint32_t bit_of(Protocol p) { return 1u << static_cast<int>(p); }

struct TunerChoice {
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  int channels = 1;
  double latency_us = 0;
  double algbw_GBps = 0;
  double time_us = 0;  // NCCL's own prediction
};

// One (algorithm, protocol) cell of NCCL's TUNING table: latency and algorithm bandwidth (0 = unusable).
struct TunerCell {
  double latency_us = 0;
  double algbw_GBps = 0;
};
TunerCell tuner_cell(const NcclTunerTable& k, workload::CollType coll, Algorithm a, Protocol p, const TunerTopology& t);

// NCCL's constant tables (facts §2-§3): base latency per (algorithm, protocol) and hardware latency per
// link kind (0 NVLink, 1 PCI, 2 NET).
enum class HwLink { NvLink = 0, Pci = 1, Net = 2 };
double nccl_base_latency_us(const NcclTunerTable& k, Algorithm a, Protocol p);
double nccl_hw_latency_us(const NcclTunerTable& k, HwLink hw, Algorithm a, Protocol p);
double nvls_efficiency(const NcclTunerTable& k, CompCap cc);

// NCCL's time for `bytes` with (a, p) or a negative value when NCCL would not use it.
double tuner_time_us(const NcclTunerTable& k, workload::CollType coll, Algorithm a, Protocol p, uint64_t bytes,
                     const TunerTopology& t);

// The cheapest (algorithm, protocol) by NCCL's model; `force` restricts the algorithm (Auto = any) and `proto` the
// protocol (empty = any), as NCCL_ALGO / NCCL_PROTO do. Throws InputError when no allowed pair can run this
// collective on this topology.
TunerChoice tuner_choose(const NcclTunerTable& k, workload::CollType coll, uint64_t bytes, const TunerTopology& t,
                         Algorithm force = Algorithm::Auto, std::optional<Protocol> proto = std::nullopt);

}  // namespace stepsim::cost
