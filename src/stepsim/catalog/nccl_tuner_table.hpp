#pragma once
// NCCL's tuning constants (data/nccl-tuner.yaml): latencies, bandwidth caps, the tree correction, channel-reduction
// thresholds and the tuner's refinement factors, per algorithm, protocol and GPU architecture as NCCL indexes them.
// The tuner (nccl_tuner.cpp) holds the formulas; every number it uses comes from here.
#include <array>
#include <optional>
#include <string>
#include <vector>

namespace stepsim::cost {

// "2.21.5", "2.21.5-1", "v2.29.2 (nccl-headers=22902)", "2.22" (patch 0): the release's (major, minor, patch); nullopt
// for text that does not start with one.
std::optional<std::array<int, 3>> parse_nccl_version(const std::string& text);

struct NcclTunerTable {
  static constexpr int kAlgorithms = 7;  // NCCL's order: tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat
  static constexpr int kProtocols = 3;   // LL, LL128, Simple
  static constexpr int kArchs = 4;       // NCCL's compCapIndex: volta, ampere, hopper, blackwell
  static constexpr int kNodeColumns = 3; // 1 node, 2 nodes, more
  static constexpr int kTreeSizes = 24;  // log2(bytes / 64): 64 B .. 256 MiB
  using PerProto = std::array<double, kProtocols>;
  using PerColumn = std::array<double, kNodeColumns>;

  std::array<PerProto, kAlgorithms> base_latency_us{};
  std::array<std::array<PerProto, kAlgorithms>, 3> hw_latency_us{};  // nvlink, pci, net
  std::array<PerColumn, kArchs> ll_max_bw_GBps{};
  std::array<PerColumn, kArchs> per_channel_ring_ll128{}, per_channel_tree_ll128{}, per_channel_tree{},
      per_channel_nvls_tree{};
  std::array<double, kArchs> nvls_efficiency{};
  std::array<std::array<double, kTreeSizes>, kProtocols> tree_correction{};
  std::array<double, kProtocols> max_threads{}, thread_threshold_bytes{};
  double ring_ll_bus_factor = 0, ring_ll128_bus_factor = 0, tree_simple_bus_factor = 0, tree_ll_bus_divisor = 0,
         tree_ll128_bus_factor_one_node = 0, tree_ll128_bus_factor_multi_node = 0, pat_bus_factor = 0,
         collnet_direct_sm90_factor = 0, net_overhead_us_intel = 0, net_overhead_us_amd = 0,
         net_overhead_simple_factor = 0, ring_plateau_sm80_plus = 0, ring_plateau_older = 0,
         pat_inter_latency_divisor = 0, pat_per_rank_us = 0, collnet_direct_per_rank_us = 0;
  double p2p_per_channel_net_GBps = 0;  // what one point-to-point channel to a peer across the network carries
  double p2p_peers_per_batch = 0;       // peers one channel serves in a round of grouped send/recv
  std::string source;
  std::string version;  // the NCCL release these numbers are (`version`, e.g. "2.30.7")

  // What an older NCCL release had instead (`versions`): latencies replaced for every release up to `until`.
  struct LatencyChange {
    int table = 0;  // 0: base_latency_us, 1 + link: hw_latency_us of nvlink, pci, net
    int algorithm = 0;
    PerProto value{};
  };
  struct Release {
    std::array<int, 3> until{};  // major, minor, patch
    std::array<int, 3> from{};   // the oldest release the entry is known to hold for (`from`; 0.0.0: until's series)
    std::vector<LatencyChange> changes;
    std::vector<std::string> absent;  // algorithms those releases do not have (NCCL_ALGO names, e.g. "pat")
    std::string source;
  };
  std::vector<Release> releases;  // newest first
  std::vector<std::string> absent_algorithms;  // for_version's: what the release does not have

  // The constants of NCCL `version` ("2.21.5", "2.21.5-1", "2.29.2 (nccl-headers=22902)"; "" = this table's own):
  // every release entry whose `until` is at or after it applied, newest first. InputError naming `key` for a version
  // that does not parse. `*note` (when given) receives what the caller should print for a version older than the
  // oldest entry (its constants are used).
  NcclTunerTable for_version(const std::string& version, const std::string& key, std::string* note = nullptr) const;

  // Parses and validates the file (every key required, no other; numbers finite and >= 0, factors and
  // efficiencies in [0, 1] where NCCL's are). Throws InputError naming the file and the key.
  static NcclTunerTable load(const std::string& path);
};

}  // namespace stepsim::cost
